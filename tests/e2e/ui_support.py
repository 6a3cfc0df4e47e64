"""A knowledge base for the /ui tests: related documents, one searchable but not offered
(its format was dropped after indexing), and one whose title is hostile markup."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from tests.e2e.conftest import DEADLINE, Env, kb_mcp_command, make_corpus, write

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
