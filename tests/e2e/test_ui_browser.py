"""The /ui page in a real browser: headless Chromium (Debian's package) driven by Playwright,
against a real `kb-mcp serve --transport http`, on the hostile corpus (ui_support.py) and
on an ordinary team handbook (tests/fixtures/handbook_kb.py). The page as a person uses it
(the address, the keyboard, dark mode, rendered snippets, a PDF's page, a readable graph)
is in the second half. Set KB_MCP_UI_SCREENSHOTS=docs/images to retake the README's
screenshots from the handbook."""

from __future__ import annotations

import os
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from kbmcp_adapters.mcp_server.tokens import add_token
from tests.e2e.conftest import Env, stop
from tests.e2e.http_support import Served, environment, start
from tests.e2e.ui_support import (
    HOSTILE_TITLE,
    NOT_OFFERED,
    SCANNED_LINES,
    SCANNED_PDF,
    index_handbook,
    new_page,
    search,
)
from tests.fixtures.handbook_kb import PAGE_THREE_PHRASE, POLICY_PDF

#: Set to a folder (docs/images), the last test retakes the README's screenshots there.
SCREENSHOTS_ENV = "KB_MCP_UI_SCREENSHOTS"


def test_search_read_refusal_health_topics_and_graph(served: Served, page: Any) -> None:
    base = f"http://127.0.0.1:{served.port}/ui"
    page.goto(base)
    hits = search(page, "signing keys rotation")
    first = hits.first
    assert first.locator("h3 a").inner_text() == "Rotating signing keys"
    marked = {m.lower() for m in first.locator("mark").all_inner_texts()}
    assert {"signing", "keys"} <= marked  # the matched words are highlighted
    # the lines that answer, inside the lines the chunk cites (answer_lines)
    span = re.search(r"lines (\d+)–(\d+) of 6–12", first.locator(".where").inner_text())
    assert span and 6 <= int(span[1]) <= int(span[2]) <= 12

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

    # a searchable document that is not offered: its refusal, shown as what it is
    page.goto(base + "#search")
    hit = search(page, "exporting signing keys for an audit").filter(has_text=NOT_OFFERED).first
    assert hit.locator(".badge.off").inner_text() == "not offered"
    hit.locator("h3 a").click()
    refusal = page.locator("#doc-refusal")
    refusal.wait_for()
    assert "not offered by this knowledge base" in refusal.inner_text()
    assert page.locator("#doc-lines li").count() == 0

    # health: status counts and doctor's findings with their remedies
    page.goto(base + "#health")
    page.locator("#findings li").first.wait_for()
    assert "Documents" in page.locator("#status").inner_text()
    finding = page.locator('#findings li[data-check="extension-not-enabled"]')
    assert NOT_OFFERED in finding.inner_text() and "Remedy:" in finding.inner_text()

    page.goto(base + "#topics")
    page.locator("#topics .panel").first.wait_for()
    topics = page.locator("#topics").inner_text()
    assert "kb://topic/guides" in topics and NOT_OFFERED not in topics

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
        # the page, its redirect and its icon load without a token; its data does not
        assert running.request("GET", "/")[0] == 307
        assert running.request("GET", "/favicon.ico")[0] == 200
        assert running.request("GET", "/ui/api/topics")[0] == 401
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


# -- the page as a person uses it: the team handbook ------------------------------------------
@pytest.fixture(scope="module")
def handbook(tmp_path_factory: pytest.TempPathFactory, server_env: Env) -> Iterator[Served]:
    """`kb-mcp serve` on the handbook, Markdown, PDF and OCR offered (with one scanned
    PDF); stopped after the module."""
    kb, config = index_handbook(tmp_path_factory.mktemp("handbook"), server_env, scans=True)
    # indexed above: --no-index keeps the server from a start run of its own
    running = start(kb, environment(server_env), "--no-watch", "--no-index",
                    "--config", str(config))
    yield running
    stop(running.proc)
    running.log.drain()


def ui_of(served: Served) -> str:
    return f"http://127.0.0.1:{served.port}/ui"


def test_the_search_is_in_the_address_a_reload_and_a_shared_link_keep_it(
        handbook: Served, browser: Any, page: Any) -> None:
    page.goto(ui_of(handbook))
    page.click("#search-form summary")
    page.fill("#tags_any", "security")
    search(page, "rotate signing keys")
    expect(page).to_have_url(re.compile(r"#search\?q=rotate\+signing\+keys&tags_any=security$"))
    shared = page.url
    page.reload()
    page.locator('#hits[data-query="rotate signing keys"] li').first.wait_for()
    assert page.input_value("#q") == "rotate signing keys"
    assert page.input_value("#tags_any") == "security"
    # the link opened elsewhere (a colleague's browser: nothing in its storage)
    other = new_page(browser)
    try:
        other.goto(shared)
        hits = other.locator('#hits[data-query="rotate signing keys"] li')
        hits.first.wait_for()
        assert hits.first.locator("h3 a").inner_text() == "Rotating signing keys"
        assert other.input_value("#tags_any") == "security"
        # back from a document lands on the same search
        hits.first.locator("h3 a").click()
        other.locator("#doc-lines li").first.wait_for()
        other.go_back()
        other.locator('#hits[data-query="rotate signing keys"] li').first.wait_for()
        assert other.problems == []
    finally:
        other.context.close()


def test_the_keyboard_slash_arrows_and_enter_with_a_visible_focus(
        handbook: Served, page: Any) -> None:
    page.goto(ui_of(handbook) + "#search?q=deploy+production")
    hits = page.locator('#hits[data-query="deploy production"] li')
    hits.nth(1).wait_for()
    page.locator("header h1").click()  # focus leaves the search box
    expect(page.locator("#q")).not_to_be_focused()
    page.keyboard.press("/")
    expect(page.locator("#q")).to_be_focused()
    assert page.input_value("#q") == "deploy production"  # "/" was not typed into it
    # arrows move through the hits, the selected one marked and focused
    page.click("#q")
    page.keyboard.press("ArrowDown")
    first, second = hits.nth(0), hits.nth(1)
    expect(first.locator("h3 a")).to_be_focused()
    expect(first).to_have_class(re.compile(r"\bselected\b"))
    outline = first.locator("h3 a").evaluate("a => getComputedStyle(a).outlineStyle")
    assert outline != "none"  # the focus is visible
    page.keyboard.press("ArrowDown")
    expect(second.locator("h3 a")).to_be_focused()
    expect(first).not_to_have_class(re.compile(r"\bselected\b"))
    page.keyboard.press("ArrowUp")
    expect(first.locator("h3 a")).to_be_focused()
    title = first.locator("h3 a").inner_text()
    page.keyboard.press("Enter")  # opens the selected hit
    expect(page).to_have_url(re.compile(r"#doc\?"))
    page.locator("#doc-lines li.cited").first.wait_for()
    assert page.locator("#doc-title").inner_text().endswith(".md")
    assert title
    page.keyboard.press("/")  # back to the search, query kept
    expect(page.locator("#q")).to_be_focused()
    assert page.input_value("#q") == "deploy production"
    # while typing in another field "/" is a character
    page.click("#search-form summary")
    page.click("#path_globs")
    page.keyboard.type("runbooks/")
    expect(page.locator("#path_globs")).to_be_focused()
    assert page.input_value("#path_globs") == "runbooks/"
    assert page.problems == []


def _rgb(css: str) -> tuple[int, ...]:
    return tuple(int(n) for n in re.findall(r"\d+", css)[:3])


def test_dark_mode_follows_the_browsers_preference(handbook: Served, browser: Any,
                                                    page: Any) -> None:
    background = "b => getComputedStyle(b).backgroundColor"
    page.goto(ui_of(handbook))
    assert sum(_rgb(page.locator("body").evaluate(background))) > 600  # light: near white
    dark = new_page(browser, color_scheme="dark")
    try:
        dark.goto(ui_of(handbook))
        search(dark, "incident severity levels")
        assert sum(_rgb(dark.locator("body").evaluate(background))) < 150  # dark
        text = dark.locator("#hits .hit h3 a").first.evaluate("a => getComputedStyle(a).color")
        assert sum(_rgb(text)) > 300  # links stay readable on it
        if os.environ.get(SCREENSHOTS_ENV):  # the README's dark-mode picture, when retaken
            dark.screenshot(path=str(Path(os.environ[SCREENSHOTS_ENV]) / "ui-dark.png"))
    finally:
        dark.context.close()


def open_pdf_hit(served: Served, page: Any, query: str, path: str, number: int) -> Any:
    """Search ``query``, check that the hit of ``path`` cites page ``number``, open it,
    check the reader says that page: the cited lines."""
    page.goto(ui_of(served))
    hit = search(page, query).filter(has_text=path).first
    assert f"page {number}" in hit.locator(".where").inner_text()
    hit.locator("h3 a").click()
    cited = page.locator("#doc-lines li.cited")
    cited.first.wait_for()
    assert f"page {number}" in page.locator("#doc-meta").inner_text()
    return cited


def test_a_pdf_hit_opens_the_document_at_its_page(handbook: Served, page: Any) -> None:
    cited = open_pdf_hit(handbook, page, "lost device full-disk encryption laptops",
                         POLICY_PDF, 3)
    assert PAGE_THREE_PHRASE in " ".join(cited.all_inner_texts())
    assert "page 3" in cited.first.locator(".page-tag").inner_text()
    box = cited.first.bounding_box()
    assert box is not None and 0 <= box["y"] <= 800  # in view
    # the first page's text is not what is marked
    assert "reviewed every year" not in " ".join(cited.all_inner_texts())


def test_what_a_person_types_before_the_page_has_loaded_its_collections_is_kept(
        handbook: Served, page: Any) -> None:
    """The query box has focus at once; the first view waits for the collections. What is
    typed in between is kept and searched, never replaced by the address's empty query
    (under load, the page used to empty the box mid-typing and then show nothing)."""
    held: list[Any] = []
    page.route("**/ui/api/collections", lambda route: held.append(route))  # released below
    page.clock.install()
    page.goto(ui_of(handbook))
    page.clock.pause_at(time.time() + 3600)  # the search's debounce waits until resumed
    query = "promote the replica pg_ctl"
    page.type("#q", query)
    assert held, "the page asks for the collections as it loads"
    with page.expect_response("**/ui/api/collections"):
        held[0].continue_()
    page.locator('nav a.active[data-view="search"]').wait_for()  # the first view is shown
    assert page.input_value("#q") == query
    page.clock.resume()
    page.locator(f'#hits[data-query="{query}"] li').first.wait_for()


def test_a_scanned_pdf_hit_opens_its_recognised_page(handbook: Served, page: Any) -> None:
    """Issue 39: a page with no text layer, read by OCR, is found, cited by its page and
    lines, and shown as its recognised lines, marked."""
    cited = open_pdf_hit(handbook, page, "retro actions rotate the pager rota",
                         SCANNED_PDF, 2)
    marked = " ".join(cited.all_inner_texts())
    assert all(line in marked for line in SCANNED_LINES)
    assert "typed cover page" not in marked  # the typed first page is not what is marked


def test_snippets_show_markdown_as_text_code_in_monospace_and_no_empty_separators(
        handbook: Served, page: Any) -> None:
    page.goto(ui_of(handbook))
    hit = search(page, "promote the replica pg_ctl").filter(has_text="Database failover").first
    code = hit.locator(".content pre code")
    assert "pg_ctl promote" in code.inner_text()
    font = code.evaluate("c => getComputedStyle(c).fontFamily")
    assert "monospace" in font
    shown = hit.locator(".content").inner_text()
    assert "```" not in shown and "bash" not in shown.split("pg_ctl")[0]
    hit = search(page, "rotate the token signing keys every 90 days").filter(
        has_text="Rotating signing keys").first
    shown = hit.locator(".content").inner_text()
    assert "**" not in shown and "# " not in shown
    assert hit.locator(".content strong", has_text="90 days").count() == 1
    inline = hit.locator(".content code").first
    assert "monospace" in inline.evaluate("c => getComputedStyle(c).fontFamily")
    # a document without any heading: its hit names no heading and shows no "· ·"
    hit = search(page, "book leave in the team calendar").filter(has_text="people/time-off.md")
    where = hit.first.locator(".where").inner_text()
    assert "· ·" not in where and where.startswith("people/time-off.md · lines")
    for text in page.locator("#hits .where").all_inner_texts():
        assert "· ·" not in text and not text.endswith("· ")


def test_the_root_redirects_to_the_page_and_the_favicon_answers(
        handbook: Served, page: Any) -> None:
    status, headers, _ = handbook.request("GET", "/")
    assert status == 307 and headers["location"] == "/ui"
    assert "default-src 'none'" in headers["content-security-policy"]
    status, headers, body = handbook.request("GET", "/favicon.ico")
    assert status == 200 and headers["content-type"].startswith("image/svg+xml")
    assert body.startswith(b"<svg") and b"handbook" not in body
    assert "default-src 'none'" in headers["content-security-policy"]
    page.goto(f"http://127.0.0.1:{handbook.port}/")
    expect(page).to_have_url(re.compile(r"/ui$"))
    search(page, "on-call handover")
    assert page.problems == []  # no 404 for the favicon, nor anything else


def test_a_read_only_replica_does_not_offer_to_update_the_index(
        ui_kb: Path, server_env: Env, served: Served, page: Any) -> None:
    page.goto(ui_of(served) + "#health")
    page.locator("#status dd").first.wait_for()
    expect(page.locator("#rebuild")).to_be_visible()
    replica = start(ui_kb, environment(server_env), "--no-watch", "--read-only")
    try:
        page.goto(ui_of(replica) + "#health")
        page.locator("#status dd").first.wait_for()
        expect(page.locator("#read-only-note")).to_be_visible()
        expect(page.locator("#rebuild")).to_be_hidden()
    finally:
        stop(replica.proc)
        replica.log.drain()


def _overlap(a: dict[str, float], b: dict[str, float]) -> bool:
    return (a["x"] < b["x"] + b["width"] and b["x"] < a["x"] + a["width"]
            and a["y"] < b["y"] + b["height"] and b["y"] < a["y"] + a["height"])


def test_a_graph_past_twenty_nodes_keeps_its_labels_apart_and_says_what_it_left_out(
        served: Served, page: Any) -> None:
    page.goto(ui_of(served) + "#graph?path=archive/q00.md&fan_out=20&max_nodes=30")
    nodes = page.locator("#graph .node")
    nodes.nth(20).wait_for()
    assert nodes.count() == 30
    labels = page.locator("#graph .node text:not(.quiet)")
    assert 1 <= labels.count() <= 17  # the seed and at most 16 of the most linked
    boxes = [labels.nth(i).bounding_box() for i in range(labels.count())]
    assert all(box is not None for box in boxes)
    for i, a in enumerate(boxes):
        for b in boxes[i + 1:]:
            assert not _overlap(a, b), (a, b)
    quiet = page.locator("#graph .node:has(text.quiet)").first
    label = quiet.locator("text")
    expect(label).to_be_hidden()
    quiet.locator("circle").hover()
    expect(label).to_be_visible()  # pointing at a node shows its title
    status = page.locator("#graph-status").inner_text()
    assert status.startswith("Showing 30 documents")
    assert "left out" in status and "Max nodes" in status
    assert "truncated" not in status and "fan_out" not in status and "max_nodes" not in status
    assert page.problems == []


def test_the_screenshot_tour_of_the_handbook_renders_every_view(
        handbook: Served, page: Any, tmp_path: Path) -> None:
    """The tour behind the README's pictures; with KB_MCP_UI_SCREENSHOTS=docs/images the
    pictures are retaken there, otherwise they go to a temporary folder."""
    folder = Path(os.environ.get(SCREENSHOTS_ENV) or tmp_path)
    shots: list[Path] = []

    def shoot(page: Any, name: str) -> None:
        shots.append(folder / f"ui-{name}.png")
        page.screenshot(path=str(shots[-1]))

    base = ui_of(handbook)
    page.goto(base)
    search(page, "rotate the signing keys")
    page.keyboard.press("ArrowDown")
    shoot(page, "search")
    page.keyboard.press("Enter")
    page.locator("#doc-lines li.cited").first.wait_for()
    shoot(page, "document")
    page.goto(base + "#doc?uri=kb://doc/../secrets.md")
    page.locator("#doc-refusal").wait_for()
    shoot(page, "refusal")
    page.goto(base + "#health")
    page.locator("#status dd").first.wait_for()
    shoot(page, "health")
    page.goto(base + "#topics")
    page.locator("#topics .panel").first.wait_for()
    shoot(page, "topics")
    page.goto(base + "#graph?path=runbooks/key-rotation.md&threshold=0.1&fan_out=6")
    page.locator("#graph .node").nth(4).wait_for()
    shoot(page, "graph")
    assert [p.name for p in shots] == [f"ui-{n}.png" for n in (
        "search", "document", "refusal", "health", "topics", "graph")]
    assert all(p.stat().st_size > 10_000 for p in shots)  # a rendered page, not a blank one
    # the one console message is the refused read's 404 (the refusal view shows it)
    assert all("404" in problem for problem in page.problems), page.problems
