"""/ui on a server of several collections, in Debian's Chromium (decision 0042): the search
form offers a collection picker, every hit is labelled with its collection and a picked
collection's search shows only its documents, and Health lists each collection."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path
from typing import Any

from playwright.sync_api import expect

from tests.conftest import write_files
from tests.e2e.conftest import DEADLINE, Env, LineReader, kb_mcp_command, stop
from tests.e2e.http_support import READY, environment
from tests.e2e.test_collections_e2e import _ui
from tests.e2e.ui_support import WAIT_MS

NAMES = ("alpha", "beta")


def _team(root: Path) -> Path:
    for name in NAMES:
        write_files(root / name, {
            f"notes/{name}-{i}.md": f"# {name.title()} note {i}\n\nThe shared harbor lantern "
                                    f"notes of {name}, number {i}.\n" for i in range(3)})
    config = root / "kb-mcp.toml"
    config.write_text("".join(f'[[collections]]\nname = "{n}"\npath = "{n}"\n\n'
                              for n in NAMES), encoding="utf-8")
    return config


def test_the_page_picks_a_collection_labels_hits_and_shows_each_in_health(
        tmp_path: Path, server_env: Env, page: Any) -> None:
    config = _team(tmp_path / "team")
    proc = subprocess.Popen(
        [*kb_mcp_command(), "serve", "--config", str(config), "--transport", "http",
         "--port", "0", "--no-watch"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE, text=True, encoding="utf-8",
        env=environment(server_env))
    assert proc.stderr is not None
    log = LineReader(proc.stderr)
    try:
        port = int(log.wait_for(READY).group(1))
        deadline = time.monotonic() + DEADLINE
        while not all(c["ready"] for c in _ui(port, "/ui/api/collections")[1]["collections"]):
            assert time.monotonic() < deadline, "the start runs did not finish"
            time.sleep(0.3)
        page.goto(f"http://127.0.0.1:{port}/ui")
        expect(page.locator("#collection-row")).to_be_visible()
        options = page.locator("#collection option")
        expect(options).to_have_count(3)
        assert [options.nth(i).get_attribute("value") for i in range(3)] == ["", *NAMES]

        page.fill("#q", "harbor lantern notes")
        hits = page.locator("#hits li.hit")
        expect(hits.first).to_be_visible(timeout=WAIT_MS)  # the model loads first
        labels = {hits.nth(i).locator(".badge.collection").inner_text()
                  for i in range(hits.count())}
        assert labels == set(NAMES)  # both defaults searched, each hit labelled

        page.select_option("#collection", "beta")
        expect(page.locator("#hits li.hit .badge.collection").first).to_have_text(
            "beta", timeout=WAIT_MS)
        page.wait_for_function("() => [...document.querySelectorAll('#hits .badge.collection')]"
                               ".every((b) => b.textContent === 'beta')", timeout=WAIT_MS)
        assert "collection=beta" in page.url  # the address keeps the pick

        page.locator("#hits li.hit h3 a").first.click()
        expect(page.locator("#doc-lines li").first).to_be_visible(timeout=WAIT_MS)
        assert "kb://doc/beta/notes/" in page.locator("#doc-meta").inner_text()

        page.goto(f"http://127.0.0.1:{port}/ui#health")
        rows = page.locator("#collections-table tbody tr")
        expect(rows).to_have_count(2, timeout=WAIT_MS)
        assert [rows.nth(i).get_attribute("data-collection") for i in range(2)] == list(NAMES)
        assert rows.nth(0).locator("td").nth(1).inner_text() == "3"
        assert [p for p in page.problems if "status of 404" not in p] == []
    finally:
        stop(proc)
        log.drain()
