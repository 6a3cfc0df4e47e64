"""kb-mcp's MCP App views in a real host (decision 0055): a page on the official host-side
SDK (``@modelcontextprotocol/ext-apps``, apps_support.py) in Debian's Chromium, its client
connected to a real ``kb-mcp serve`` over stdio and over HTTP, in both protocol eras (the
``initialize`` handshake and the 2026-07-28 ``server/discover``). A search shows its hits,
a click opens the reader at the cited lines, the graph draws and opens a document, hostile
titles run nothing, a read-only replica says so, and every byte comes through the host. Set
KB_MCP_UI_SCREENSHOTS=docs/images to retake docs/ui.md's pictures of the three views.

Servers are shared where a test needs no fresh one: one `kb-mcp serve` over stdio on the UI
corpus for the module (``stdio_server``), one over HTTP (conftest's ``served``), and one
read-only replica over HTTP (``alike``); a test starts its own only for a state of its own
(no index, an index being built, a token, another era's client)."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from pathlib import Path
from typing import Any

import pytest
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.server.apps import EXTENSION_ID

from kbmcp_adapters.mcp_server.tokens import add_token
from tests.e2e.apps_support import Bridge, bridge, host_bundle, show
from tests.e2e.conftest import Env, kb_mcp_command, run_index, stop, write
from tests.e2e.http_support import Served, environment, start
from tests.e2e.ui_support import HOSTILE_TITLE, NOT_OFFERED, index_handbook, search
from tests.fixtures.handbook_kb import PAGE_THREE_PHRASE, POLICY_PDF
from tests.integration.test_writer_lock import hold_in_child

VIEWS = {"search": "ui://kb-mcp/search.html", "get_document": "ui://kb-mcp/reader.html",
         "get_connection_graph": "ui://kb-mcp/graph.html"}
SCREENSHOTS_ENV = "KB_MCP_UI_SCREENSHOTS"
#: A heading that would run script if a view ever inserted it as HTML.
HOSTILE_HEADING = '<img src=x onerror="window.__kbXss=2">'


@pytest.fixture(scope="module")
def script(tmp_path_factory: pytest.TempPathFactory) -> str:
    return host_bundle(tmp_path_factory.mktemp("apps-host"))


@contextmanager
def over_stdio(kb: Path, env: Env, log: Path, mode: str, *args: str, apps: bool = True
               ) -> Iterator[Bridge]:
    """The host's client on `kb-mcp serve` over stdio (its stderr in ``log``); ``args``:
    more options of `serve`."""
    command = kb_mcp_command()
    params = StdioServerParameters(
        command=command[0],
        args=[*command[1:], "serve", "--kb-path", str(kb), "--no-watch", *args],
        env={"XDG_CONFIG_HOME": os.environ["XDG_CONFIG_HOME"], **env})
    with (log.open("w", encoding="utf-8") as errlog,
          bridge(stdio_client(params, errlog=errlog), mode, apps=apps) as link):
        yield link


@pytest.fixture(scope="module")
def stdio_server(ui_kb: Path, server_env: Env, tmp_path_factory: pytest.TempPathFactory
                 ) -> Iterator[Bridge]:
    """The module's `kb-mcp serve` over stdio on the (indexed) UI corpus, the initialize
    handshake, with the MCP Apps extension."""
    log = tmp_path_factory.mktemp("stdio") / "serve.log"
    with over_stdio(ui_kb, server_env, log, "legacy", "--no-index") as link:
        yield link


@pytest.fixture()
def stdio_host(stdio_server: Bridge) -> Bridge:
    """The host's client over stdio, with no call of an earlier test in its record."""
    stdio_server.calls.clear()
    return stdio_server


@pytest.fixture()
def http_host(served: Served) -> Iterator[Bridge]:
    """The host's client: `kb-mcp serve --transport http`, the 2026-07-28 era (discover)."""
    with bridge(served.url, "auto") as link:
        assert link.client.protocol_version == "2026-07-28"
        yield link


def shown_after_ms(page: Any, view: Any) -> float:
    """The time from the tool result in the host's hand to the view showing it (the host
    page's and the view's marks, both since the epoch): measured, never asserted."""
    view.locator("body[data-shown-at]").wait_for(state="attached")
    shown = float(view.locator("body").get_attribute("data-shown-at"))
    return shown - float(page.locator("body").get_attribute("data-result-at"))


def open_hit(page: Any, script: str, link: Bridge, query: str, text: str) -> Any:
    """The search view of ``query``, its hit holding ``text`` clicked: the view's frame."""
    view = show(page, script, link, "search", {"query": query})
    hit = view.locator("#hits li").filter(has_text=text).first
    hit.wait_for()
    hit.locator("h3 a").click()
    return view


def search_shows_hits_and_opens_the_reader(page: Any, script: str, link: Bridge) -> Any:
    view = show(page, script, link, "search", {"query": "signing keys rotation"})
    hits = view.locator("#hits[data-query='signing keys rotation'] li")
    hits.first.wait_for()
    took = shown_after_ms(page, view)
    assert took >= 0
    print(f"\nview: the search's hits shown {took:.0f} ms after the tool result")
    first = hits.first
    assert first.locator("h3 a").inner_text() == "Rotating signing keys"
    assert {"signing", "keys"} <= {m.lower() for m in first.locator("mark").all_inner_texts()}
    # the lines that answer, inside the lines the chunk cites (answer_lines)
    span = re.search(r"lines (\d+)–(\d+) of 6–12", first.locator(".where").inner_text())
    assert span and 6 <= int(span[1]) <= int(span[2]) <= 12
    first.locator("h3 a").click()
    cited = view.locator("#doc-lines li.cited")
    cited.first.wait_for()
    assert "signing keys" in " ".join(cited.all_inner_texts()).lower()
    assert ("tools/call", "get_document") in link.calls  # through the host, nothing else
    return view


def test_over_stdio_search_reader_graph_and_hostile_titles(
        stdio_host: Bridge, script: str, page: Any) -> None:
    view = search_shows_hits_and_opens_the_reader(page, script, stdio_host)
    # a server that writes its own index: asked, and no "read-only replica" said
    view.locator("#read-only-note[data-asked='yes']").wait_for(state="attached")
    assert view.locator("#read-only-note").is_hidden()
    view.locator("#doc-back").click()
    assert view.locator("#hits li").first.is_visible()
    view.locator("#explain").click()  # explain on demand: the same search, through the host
    view.locator("#hits li .explain").first.wait_for()
    assert view.locator("#hits li .explain").count() == view.locator("#hits li").count()

    # a title made of markup is text, and runs nothing
    view = show(page, script, stdio_host, "search", {"query": "a title made of markup"})
    hostile = view.locator("#hits li").filter(has_text="made of markup").first
    hostile.wait_for()
    assert hostile.locator("h3 a").inner_text() == HOSTILE_TITLE
    assert view.locator("#hits img").count() == 0
    assert view.locator("body").evaluate("b => b.ownerDocument.defaultView.__kbXss") is None

    # a searchable document that is not offered: the reader says it was refused
    view = open_hit(page, script, stdio_host, "exporting signing keys for an audit",
                    NOT_OFFERED)
    refusal = view.locator("#doc-refusal")
    refusal.wait_for()
    assert "Refused" in refusal.inner_text() and view.locator("#doc-lines li").count() == 0

    # the graph of a document draws, and a node opens its document
    view = show(page, script, stdio_host, "get_connection_graph", {"path": "guides/keys.md"})
    view.locator("#graph .node").nth(1).wait_for()
    view.locator('#graph .node[data-path="guides/key-rollback.md"] circle').click()
    view.locator("#doc-lines li").first.wait_for()
    assert "Key rollback" in view.locator("#doc-lines").inner_text()
    assert page.problems == []  # no script error, no Content-Security-Policy violation


def test_over_http_in_the_2026_era_search_reader_and_document(
        http_host: Bridge, script: str, page: Any) -> None:
    search_shows_hits_and_opens_the_reader(page, script, http_host)
    view = show(page, script, http_host, "get_document",
                {"path": "guides/handbook.md", "start_line": 1, "max_lines": 50})
    view.locator("#doc-lines li").nth(49).wait_for()
    assert view.locator("#doc-next").is_enabled()
    view.locator("#doc-next").click()
    view.locator("#doc-lines[start='51']").wait_for()
    assert page.problems == []


@pytest.mark.parametrize("mode", ["legacy", "auto"])
@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_a_client_without_the_extension_sees_no_view_in_either_era(
        transport: str, mode: str, ui_kb: Path, server_env: Env, served: Served,
        tmp_path: Path, request: pytest.FixtureRequest) -> None:
    def connect(apps: bool) -> AbstractContextManager[Bridge]:
        if transport == "http":
            return bridge(served.url, mode, apps=apps)
        if apps and mode == "legacy":  # the module's server is that client already
            return nullcontext(request.getfixturevalue("stdio_server"))
        return over_stdio(ui_kb, server_env, tmp_path / f"serve-{apps}.log", mode,
                          "--no-index", apps=apps)

    with connect(apps=False) as link:
        era = link.client.protocol_version
        tools = link.tools()
        listed = link.portal.call(link.client.list_resources).resources
        searched = link.call("search", {"query": "signing keys"})
    assert era == ("2026-07-28" if mode == "auto" else "2025-11-25")
    assert [name for name, t in tools.items() if t.meta and "ui" in t.meta] == []
    assert [r.uri for r in listed if r.uri.startswith("ui://")] == []
    assert not searched.is_error and searched.structured_content is not None
    assert searched.structured_content["results"]
    with connect(apps=True) as link:
        declared = {n: t.meta["ui"]["resourceUri"] for n, t in link.tools().items()
                    if t.meta and "ui" in t.meta}
        if mode == "auto":  # the 2026 era's capabilities name the extension served
            assert EXTENSION_ID in (link.client.server_capabilities.extensions or {})
    assert declared == VIEWS


def test_screenshots_of_the_three_views_and_a_pdf_hit_at_its_page(
        server_env: Env, script: str, page: Any, tmp_path: Path) -> None:
    """The three views on the team handbook (tests/fixtures/handbook_kb.py), over stdio; a
    PDF hit opens at its page."""
    folder = Path(os.environ.get(SCREENSHOTS_ENV) or tmp_path)
    kb, config = index_handbook(tmp_path, server_env)
    with over_stdio(kb, server_env, tmp_path / "serve.log", "legacy", "--no-index",
                    "--config", str(config)) as link:
        view = show(page, script, link, "search", {"query": "rotate the signing keys"})
        view.locator("#hits li").first.wait_for()
        page.screenshot(path=str(folder / "app-search.png"), full_page=True)
        view.locator("#hits li h3 a").first.click()
        view.locator("#doc-lines li.cited").first.wait_for()
        page.screenshot(path=str(folder / "app-reader.png"), full_page=True)
        view = show(page, script, link, "get_connection_graph",
                    {"query": "on-call incidents", "max_nodes": 40})
        view.locator("#graph .node").nth(1).wait_for()
        page.screenshot(path=str(folder / "app-graph.png"), full_page=True)
        # a PDF hit opens the reader at its page, the hit's text marked
        view = open_hit(page, script, link, "lost device full-disk encryption laptops",
                        POLICY_PDF)
        cited = view.locator("#doc-lines li.cited")
        cited.first.wait_for()
        assert "page 3" in view.locator("#doc-meta").inner_text()
        assert PAGE_THREE_PHRASE in " ".join(cited.all_inner_texts())
    assert page.problems == []


# -- read at a glance: folded passages, titles that collide (the view and /ui alike) ------------
@pytest.fixture(scope="module")
def alike(tmp_path_factory: pytest.TempPathFactory, server_env: Env) -> Iterator[Served]:
    """Two documents titled alike in two folders, and one long passage whose match sits in
    its middle; indexed, then served over HTTP by a read-only replica (``--read-only``: the
    module's server of that index state)."""
    kb = tmp_path_factory.mktemp("alike") / "kb"
    for version in ("v1", "v2"):
        write(kb, f"{version}/notes.md", f"---\ntitle: Release notes\n---\n# Release notes\n\n"
                                          f"Release {version} adds the zebra export.\n")
    lines = [f"Step {i}: check the crossing of lane {i} before the shift." for i in range(1, 15)]
    lines[8] = "Step 9: the zebra crossing signals turn amber at dusk."
    write(kb, "ops/lanes.md", "---\ntitle: Lane checks\n---\n# Lane checks\n\n" +
          "\n".join(lines) + "\n")
    write(kb, "ops/markup.md", f"---\ntitle: Markup heading\n---\n# Markup\n\n"
          f"## Tags &amp; {HOSTILE_HEADING} in titles\n\nA section whose heading holds "
          "markup.\n\n"
          "## Second\n\nMore text.\n")
    run_index(kb, server_env)
    running = start(kb, environment(server_env), "--read-only")
    yield running
    stop(running.proc)
    running.log.drain()


def assert_readable(hits: Any) -> None:
    titled = {hits.nth(i).locator("h3 a").inner_text(): hits.nth(i) for i in range(hits.count())}
    lanes = titled["Lane checks"]
    assert "zebra crossing signals" in lanes.locator(".content .cited").inner_text()
    assert "more lines above" in lanes.locator(".fold summary").first.inner_text()
    assert not lanes.get_by_text("Step 2: check the crossing").is_visible()  # folded away
    box = lanes.bounding_box()
    assert box is not None and box["height"] < 260  # a hit no longer fills the screen
    notes = [h for h in hits.all() if h.locator("h3 a").inner_text() == "Release notes"]
    assert sorted(h.locator(".folder").inner_text() for h in notes) == ["v1/", "v2/"]
    assert lanes.locator(".folder").count() == 0  # a title of its own needs no folder


def test_hits_show_their_cited_lines_and_colliding_titles_their_folder(
        alike: Served, script: str, page: Any) -> None:
    query = "zebra crossing release notes"
    with bridge(alike.url, "auto") as link:
        view = show(page, script, link, "search", {"query": query, "limit": 10})
        hits = view.locator(f"#hits[data-query='{query}'] li.hit")
        hits.nth(2).wait_for()
        assert_readable(hits)
    page.goto(f"http://127.0.0.1:{alike.port}/ui#search?limit=10")
    assert_readable(search(page, query))
    assert page.problems == []


def assert_laid_out(frame: Any) -> None:
    """Every node inside the drawing, no two circles on each other, and a legend naming the
    folders the nodes are coloured by."""
    frame.locator("#graph .node").nth(2).wait_for()
    svg = frame.locator("#graph").bounding_box()
    circles = [c.bounding_box() for c in frame.locator("#graph .node circle").all()]
    assert svg is not None and all(c is not None for c in circles)
    for c in circles:
        assert svg["x"] <= c["x"] and c["x"] + c["width"] <= svg["x"] + svg["width"] + 1
        assert svg["y"] <= c["y"] and c["y"] + c["height"] <= svg["y"] + svg["height"] + 1
    for i, a in enumerate(circles):
        for b in circles[i + 1:]:
            apart = ((a["x"] - b["x"]) ** 2 + (a["y"] - b["y"]) ** 2) ** 0.5
            assert apart >= min(a["width"], b["width"]) * 0.9, (a, b)
    legend = frame.locator("#graph-legend").inner_text()
    assert "guides/ (" in legend and "where the graph starts" in legend


def test_the_graph_is_laid_out_by_force_with_a_legend_in_the_view_and_in_ui(
        served: Served, script: str, page: Any) -> None:
    with bridge(served.url, "legacy") as link:
        view = show(page, script, link, "get_connection_graph",
                    {"query": "signing keys", "threshold": 0.0})
        assert_laid_out(view)
    page.goto(f"http://127.0.0.1:{served.port}/ui#graph?query=signing+keys&threshold=0")
    assert_laid_out(page)
    assert page.problems == []


def test_honest_states_no_index_and_low_confidence(
        stdio_host: Bridge, script: str, page: Any, server_env: Env, tmp_path: Path) -> None:
    view = show(page, script, stdio_host, "search", {"query": "quantum chromodynamics lattice"})
    status = view.locator("#search-status.notice")
    status.wait_for()
    assert "low confidence: nothing matched clearly" in status.inner_text()
    kb = tmp_path / "unindexed"
    write(kb, "notes/a.md", "# A\n\nNot indexed yet.\n")
    with over_stdio(kb, server_env, tmp_path / "bare.log", "legacy", "--no-index") as bare:
        view = show(page, script, bare, "search", {"query": "anything"})
        error = view.locator("#error")
        error.wait_for()
        assert error.inner_text().startswith("index_not_found: this knowledge base has no index")
        assert view.locator("#hits li").count() == 0
    assert page.problems == []


def test_a_server_behind_a_token_the_page_never_holds_it(
        ui_kb: Path, server_env: Env, script: str, page: Any, tmp_path: Path) -> None:
    tokens = tmp_path / "tokens.json"
    token, _ = add_token(tokens, "host")
    running = start(ui_kb, environment(server_env), "--no-watch", "--tokens-file", str(tokens))
    try:
        with bridge(running.url, "legacy", token=token) as link:
            search_shows_hits_and_opens_the_reader(page, script, link)
            frames = [page.content(), *(f.content() for f in page.frames)]
    finally:
        stop(running.proc)
        running.log.drain()
    assert len(frames) > 2 and not [f for f in frames if token in f]
    assert page.problems == []


def test_a_heading_made_of_markup_is_text_in_the_reader_and_its_outline(
        alike: Served, script: str, page: Any) -> None:
    with bridge(alike.url, "auto") as link:
        view = show(page, script, link, "get_document",
                    {"path": "ops/markup.md", "outline": True})
        outline = view.locator("#doc-outline button")
        outline.first.wait_for(state="attached")
        headings = outline.all_text_contents()  # (the outline is folded: text, not shown)
        assert any(h.startswith("Tags &") for h in headings), headings
        assert HOSTILE_HEADING in view.locator("#doc-lines").inner_text()
        assert view.locator("img").count() == 0
        assert view.locator("body").evaluate("b => b.ownerDocument.defaultView.__kbXss") is None
    assert page.problems == []


def test_a_read_only_replica_says_so_in_the_views_as_in_ui(
        alike: Served, script: str, page: Any) -> None:
    """The replica's views learn it through the host (``index_status``'s ``read_only``)
    and say it in /ui's words (a server that writes its index says nothing of the kind:
    ``test_over_stdio_search_reader_graph_and_hostile_titles``)."""
    with bridge(alike.url, "auto") as link:
        for tool, args in (("search", {"query": "zebra crossing"}),
                           ("get_document", {"path": "ops/lanes.md"})):
            view = show(page, script, link, tool, args)
            note = view.locator("#read-only-note")
            note.wait_for()
            assert note.inner_text().startswith("This server is a read-only replica")
            assert ("tools/call", "index_status") in link.calls
    in_view = note.inner_text()
    page.goto(f"http://127.0.0.1:{alike.port}/ui#health")
    page.locator("#read-only-note").wait_for()
    assert " ".join(page.locator("#read-only-note").inner_text().split()) == \
        " ".join(in_view.split())
    assert page.problems == []


def test_while_the_index_is_being_built_the_view_says_so(
        server_env: Env, script: str, page: Any, tmp_path: Path) -> None:
    kb = tmp_path / "fresh"
    write(kb, "notes/a.md", "# A\n\nNot indexed yet.\n")
    holder = hold_in_child(kb / ".kb-mcp")  # another writer: the start run waits for it
    try:
        with over_stdio(kb, server_env, tmp_path / "fresh.log", "legacy") as link:
            view = show(page, script, link, "search", {"query": "anything"})
            progress = view.locator("#progress")
            progress.wait_for()
            assert view.locator("#progress-text").inner_text().startswith("indexing")
            assert view.locator("#search-status").inner_text().startswith("No hits yet")
            assert view.locator("#hits li").count() == 0
    finally:
        holder.kill()
        holder.wait(timeout=30)
    assert page.problems == []
