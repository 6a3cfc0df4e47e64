"""The /ui page in a real browser: headless Chromium (Debian's package) driven by Playwright,
against a real `kb-mcp serve --transport http`. Set KB_MCP_UI_SCREENSHOTS=docs/images to
refresh the README's screenshots from this run."""

from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from kbmcp_adapters.mcp_server.tokens import add_token
from tests.e2e.conftest import Env, stop
from tests.e2e.http_support import Served, environment, start
from tests.e2e.ui_support import HOSTILE_TITLE, NOT_OFFERED

CHROMIUM = "/usr/bin/chromium"
#: Without the background-networking flags Chromium keeps calling home on a closed network.
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                 "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]
WAIT_MS = 60_000  # every wait of the page ends by then (the first search loads the model)


def chromium_or_skip() -> str:
    if shutil.which(CHROMIUM) is None:
        if os.environ.get("CI") == "true":
            pytest.fail(f"{CHROMIUM} is missing: .ci/run installs Debian's chromium package")
        pytest.skip(f"{CHROMIUM} is not installed (apt install chromium)")
    return CHROMIUM


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    executable = chromium_or_skip()
    from playwright.sync_api import sync_playwright  # imported once Chromium is known

    with sync_playwright() as pw:
        launched = pw.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS,
                                      timeout=WAIT_MS)
        yield launched
        launched.close()


@pytest.fixture()
def page(browser: Any) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1200, "height": 800})
    opened = context.new_page()
    opened.set_default_timeout(WAIT_MS)
    problems: list[str] = []
    opened.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
    opened.on("pageerror", lambda e: problems.append(str(e)))
    opened.problems = problems
    yield opened
    context.close()


def shoot(page: Any, name: str) -> None:
    folder = os.environ.get("KB_MCP_UI_SCREENSHOTS")
    if folder:
        page.screenshot(path=str(Path(folder) / f"ui-{name}.png"))


def search(page: Any, query: str) -> Any:
    """Type a query as a person does; wait for the hits of that very query."""
    page.fill("#q", "")
    page.type("#q", query, delay=5)
    # (the page's CSP forbids eval, so every wait is a locator, never wait_for_function)
    answered = page.locator(f"#hits[data-query={json.dumps(query)}] li")
    answered.first.wait_for()
    return answered


def test_search_read_refusal_health_topics_and_graph(served: Served, page: Any) -> None:
    base = f"http://127.0.0.1:{served.port}/ui"
    page.goto(base)
    hits = search(page, "signing keys rotation")
    first = hits.first
    assert first.locator("h3 a").inner_text() == "Rotating signing keys"
    marked = {m.lower() for m in first.locator("mark").all_inner_texts()}
    assert {"signing", "keys"} <= marked  # the matched words are highlighted
    assert "lines 6–" in first.locator(".where").inner_text()
    shoot(page, "search")

    # a title made of markup is shown as text and never runs
    hostile = search(page, "a title made of markup").filter(has_text="made of markup").first
    assert hostile.locator("h3 a").inner_text() == HOSTILE_TITLE
    assert page.locator("#hits img").count() == 0
    assert page.evaluate("window.__kbXss") is None

    # open a hit: the document, scrolled to the cited lines
    search(page, "incident pager escalates on-call").filter(has_text="Incident pager").first \
        .locator("h3 a").click()
    cited = page.locator("#doc-lines li.cited")
    cited.first.wait_for()
    assert "incident pager escalates" in " ".join(cited.all_inner_texts())
    assert page.locator("#doc-lines li").count() > 160
    assert page.evaluate("window.scrollY") > 0
    box = cited.first.bounding_box()
    assert box is not None and 0 <= box["y"] <= 800  # in view
    shoot(page, "document")

    # a searchable document that is not offered: its refusal, shown as what it is
    page.goto(base + "#search")
    hit = search(page, "exporting signing keys for an audit").filter(has_text=NOT_OFFERED).first
    assert hit.locator(".badge.off").inner_text() == "not offered"
    hit.locator("h3 a").click()
    refusal = page.locator("#doc-refusal")
    refusal.wait_for()
    assert "not offered by this knowledge base" in refusal.inner_text()
    assert page.locator("#doc-lines li").count() == 0
    shoot(page, "refusal")

    # health: status counts and doctor's findings with their remedies
    page.goto(base + "#health")
    page.locator("#findings li").first.wait_for()
    assert "Documents" in page.locator("#status").inner_text()
    finding = page.locator('#findings li[data-check="extension-not-enabled"]')
    assert NOT_OFFERED in finding.inner_text() and "Remedy:" in finding.inner_text()
    shoot(page, "health")

    page.goto(base + "#topics")
    page.locator("#topics .panel").first.wait_for()
    topics = page.locator("#topics").inner_text()
    assert "kb://topic/guides" in topics and NOT_OFFERED not in topics
    shoot(page, "topics")

    # the graph: drawn, pannable, zoomable, each document a way into its text
    page.goto(base + "#graph?path=guides/keys.md")
    page.locator("#graph .node").nth(1).wait_for()
    nodes = page.locator("#graph .node")
    paths = [nodes.nth(i).get_attribute("data-path") for i in range(nodes.count())]
    assert paths[0] == "guides/keys.md" and "guides/key-rollback.md" in paths
    assert NOT_OFFERED not in paths
    before = page.get_attribute("#graph", "viewBox")
    page.locator("#graph").hover()
    page.mouse.wheel(0, 300)
    expect(page.locator("#graph")).not_to_have_attribute("viewBox", before or "")
    zoomed = page.get_attribute("#graph", "viewBox")
    box = page.locator("#graph").bounding_box()
    page.mouse.move(box["x"] + 20, box["y"] + 20)
    page.mouse.down()
    page.mouse.move(box["x"] + 120, box["y"] + 70, steps=4)
    page.mouse.up()
    assert page.get_attribute("#graph", "viewBox") != zoomed  # panned
    page.goto(base + "#graph?path=guides/keys.md")  # fresh view for the picture
    page.locator("#graph .node").nth(1).wait_for()
    shoot(page, "graph")
    page.locator('#graph .node[data-path="guides/key-rollback.md"] circle').click()
    expect(page).to_have_url(re.compile(r"#doc\?"))
    page.locator("#doc-lines li").first.wait_for()
    assert "Key rollback" in page.locator("#doc-lines").inner_text()

    # no script error, no Content-Security-Policy violation (the refusal's 404 is expected)
    assert [p for p in page.problems if "status of 404" not in p] == []


def test_with_a_token_the_page_asks_for_it_once_and_then_works(
        ui_kb: Path, server_env: Env, tmp_path: Path, page: Any) -> None:
    tokens = tmp_path / "tokens.json"
    token, _ = add_token(tokens, "browser")
    running = start(ui_kb, environment(server_env), "--no-watch", "--tokens-file", str(tokens))
    try:
        page.goto(f"http://127.0.0.1:{running.port}/ui#topics")
        page.locator("#token-form").wait_for()  # the data call was refused: asked once
        page.fill("#token", "kbm_wrong")
        page.click("#token-form button")
        page.locator("#token-error").wait_for()
        assert "refused" in page.locator("#token-error").inner_text()
        page.fill("#token", token)
        page.click("#token-form button")
        page.locator("#topics .panel").first.wait_for()
        assert page.locator("#token-form").is_hidden()
        stored = page.evaluate("sessionStorage.getItem('kb-mcp-token')")
        assert stored == token
        assert page.evaluate("localStorage.length") == 0  # never beyond this tab
    finally:
        stop(running.proc)
        running.log.drain()


def test_a_link_with_bad_percent_encoding_shows_an_error_not_an_empty_view(
        served: Served, page: Any) -> None:
    base = f"http://127.0.0.1:{served.port}/ui"
    page.goto(base + "#doc?uri=%E0%A4%A")
    refusal = page.locator("#doc-refusal")
    refusal.wait_for()
    assert "not valid percent-encoding" in refusal.inner_text()
    assert page.locator("#doc-lines li").count() == 0
    page.goto(base + "#doc?uri=kb%3A%2F%2Fdoc%2Freadme.md")  # the view still works after it
    page.locator("#doc-lines li").first.wait_for()
    assert refusal.is_hidden()
    # no URIError, no other script error (a 404 is the browser asking for a favicon)
    assert [p for p in page.problems if "status of 404" not in p] == []
