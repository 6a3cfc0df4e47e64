"""Knowledge bases for the /ui tests: the hostile one (related documents, one searchable
but not offered as its format was dropped after indexing, one whose title is hostile
markup) and the ordinary team handbook of tests/fixtures/handbook_kb.py."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import DEADLINE, Env, kb_mcp_command, make_corpus, write

CHROMIUM = "/usr/bin/chromium"
#: Without the background-networking flags Chromium keeps calling home on a closed network.
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                 "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]
WAIT_MS = 60_000  # every wait of the page ends by then (the first search loads the model)
VIEWPORT = {"width": 1200, "height": 800}

#: A title that would run script if the page ever inserted it as HTML.
HOSTILE_TITLE = '<img src=x onerror="window.__kbXss=1">'
NOT_OFFERED = "guides/keys-export.txt"


def make_ui_corpus(root: Path) -> Path:
    """The e2e corpus plus two key documents, a hostile title and a .txt document."""
    kb = make_corpus(root)
    write(kb, "guides/key-rollback.md",
          "---\ntitle: Key rollback\ntags: [ops, security]\n---\n# Key rollback\n\n"
          "When a signing key rotation fails, restore the previous signing key from the "
          "vault and rotate again.\n\n## Checks\n\nVerify old tokens with the previous key.\n")
    write(kb, "guides/vault.md",
          "---\ntitle: The vault\ntags: [security]\n---\n# The vault\n\n"
          "The vault stores the signing keys and rotates them on schedule.\n")
    write(kb, "notes/hostile.md",
          f"---\ntitle: '{HOSTILE_TITLE}'\n---\n# Hostile\n\n"
          "This note about signing keys has a title made of markup.\n")
    filler = "\n".join(f"Line {i} of the handbook's long preamble." for i in range(160))
    write(kb, "guides/handbook.md",
          f"---\ntitle: Team handbook\n---\n# Handbook\n\n{filler}\n\n## Incident pager\n\n"
          "The incident pager escalates to the on-call engineer after five minutes.\n")
    write(kb, NOT_OFFERED, "Exporting signing keys: copy the signing keys out of the vault "
                           "for an audit.\n")
    return kb


def index_with_txt(kb: Path, env: Env) -> None:
    """Index with .txt enabled; the server then runs with the default (Markdown only), so
    the .txt document stays searchable but is not offered."""
    config = kb.parent / "index-with-txt.toml"
    config.write_text(f'kb_path = "{kb.name}"\n\n[parsers]\nenabled = ["md", "txt"]\n',
                      encoding="utf-8")
    done = subprocess.run([*kb_mcp_command(), "index", "--config", str(config), "--quiet"],
                          env={**os.environ, **env}, capture_output=True, text=True,
                          timeout=DEADLINE, check=False)
    assert done.returncode == 0, done.stderr


def index_handbook(root: Path, env: Env, scans: bool = False) -> tuple[Path, Path]:
    """The handbook, indexed with Markdown and PDF enabled; its folder and its config file
    (a server started with it offers the PDF too). ``scans``: with ``SCANNED_PDF`` too,
    and the ``ocr`` format enabled to read it."""
    from tests.fixtures.handbook_kb import write_handbook

    kb = write_handbook(root)
    formats = '"md", "pdf"'
    if scans:
        from tests.scans import scan_png, scanned_pdf

        (kb / SCANNED_PDF).parent.mkdir(parents=True, exist_ok=True)
        (kb / SCANNED_PDF).write_bytes(scanned_pdf(["Retro minutes, typed cover page.",
                                                    scan_png(SCANNED_LINES)]))
        formats += ', "ocr"'
    config = root / "handbook.toml"
    config.write_text(f'kb_path = "{kb.name}"\n\n[parsers]\nenabled = [{formats}]\n',
                      encoding="utf-8")
    done = subprocess.run([*kb_mcp_command(), "index", "--config", str(config), "--quiet"],
                          env={**os.environ, **env}, capture_output=True, text=True,
                          timeout=DEADLINE, check=False)
    assert done.returncode == 0, done.stderr
    return kb, config


#: A scanned PDF (its second page an image, no text layer) and that page's lines.
SCANNED_PDF = "minutes/retro-whiteboard.pdf"
SCANNED_LINES = ("Retro actions: rotate the pager", "rota before the holidays.")


def chromium_or_skip() -> str:
    if shutil.which(CHROMIUM) is None:
        if os.environ.get("CI") == "true":
            pytest.fail(f"{CHROMIUM} is missing: .ci/run installs Debian's chromium package")
        pytest.skip(f"{CHROMIUM} is not installed (apt install chromium)")
    return CHROMIUM


def new_page(browser: Any, **context: Any) -> Any:
    """A page in a fresh context (its own storage), collecting script errors and CSP
    violations in ``page.problems``; the caller closes ``page.context``."""
    opened = browser.new_context(viewport=VIEWPORT, **context).new_page()
    opened.set_default_timeout(WAIT_MS)
    problems: list[str] = []
    opened.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
    opened.on("pageerror", lambda e: problems.append(str(e)))
    opened.problems = problems
    return opened


def search(page: Any, query: str) -> Any:
    """Type a query as a person does; wait for the hits of that very query."""
    page.fill("#q", "")
    page.type("#q", query, delay=5)
    # (the page's CSP forbids eval, so every wait is a locator, never wait_for_function)
    answered = page.locator(f"#hits[data-query={json.dumps(query)}] li")
    answered.first.wait_for()
    return answered
