"""The /ui page measured in headless Chromium against `kb-mcp serve --transport http`: first
paint, a search from the page against the same search through MCP, and the drawing of a
500-document connection graph."""

from __future__ import annotations

import http.client
import json
import os
import random
import subprocess
import time
from pathlib import Path
from typing import Any

from benchmarks.measure import CHILD_ENV, http_port, kb_mcp, stop, summary

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                 "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]
DEADLINE = 300.0
GRAPH_NODES = 500
QUERIES = ["signing keys rotation", "nightly database backup", "warehouse staffing report",
           "supplier review figures", "tomato staking", "rollback of a key"]
TOPICS = ["keys", "backups", "warehouse", "suppliers", "garden", "shipping"]


def write_corpus(kb: Path, files: int) -> None:
    rng = random.Random(7)
    words = ["rotation", "signing", "vault", "backup", "nightly", "storage", "warehouse",
             "staffing", "supplier", "review", "shipping", "lanes", "inventory", "tomato",
             "basil", "report", "figures", "audit", "rollback"]
    for i in range(files):
        topic = TOPICS[i % len(TOPICS)]
        body = " ".join(rng.choice(words) for _ in range(120))
        path = kb / topic / f"doc{i:03d}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"# {topic.title()} note {i}\n\n{body}\n\n## Details\n\n{body[::-1]}\n",
                        encoding="utf-8")


def graph_of(nodes: int) -> dict[str, Any]:
    """A 500-document graph from the real algorithm and layout over a fixed random world."""
    from kbmcp_core.graph import GraphBounds, build_graph

    rng = random.Random(11)
    paths = [f"topic{i % 20:02d}/doc{i:04d}.md" for i in range(nodes)]
    near = {p: [(q, rng.uniform(0.3, 0.95)) for q in rng.sample(paths, 12) if q != p]
            for p in paths}
    found = build_graph([paths[0]], lambda p: near[p], paths,
                        lambda ps: {p: f"Document {p[-8:-3]}" for p in ps},
                        lambda p: "kb://doc/" + p,
                        GraphBounds(depth=4, fan_out=20, threshold=0.0, max_nodes=nodes))
    return found.as_dict()


def ui_step(work: Path, *, files: int, repeats: int) -> dict[str, Any]:
    if not Path(CHROMIUM).exists():
        raise RuntimeError(f"{CHROMIUM} is missing (apt install chromium)")
    kb = work / "ui-kb"
    write_corpus(kb, files)
    env = {**os.environ, **CHILD_ENV}
    subprocess.run([kb_mcp(), "index", "--kb-path", str(kb), "--quiet"], env=env,
                   check=True, timeout=DEADLINE, capture_output=True)
    errlog = work / "ui-serve-stderr.log"
    with errlog.open("w", encoding="utf-8") as err:  # a file: a full pipe would stall it
        proc = subprocess.Popen([kb_mcp(), "serve", "--kb-path", str(kb), "--transport",
                                 "http", "--port", "0", "--no-watch"], env=env,
                                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=err)
    try:
        port = http_port(proc, errlog, DEADLINE)
        return _measure(port, repeats)
    finally:
        stop(proc)


#: First contentful paint since navigation start (ms), as Chromium's paint timing reports it.
PAINT_JS = """() => new Promise((done, fail) => {
  new PerformanceObserver((list, observer) => {
    const paint = list.getEntries().find((e) => e.name === 'first-contentful-paint');
    if (paint) { observer.disconnect(); done(paint.startTime); }
  }).observe({type: 'paint', buffered: true});
  setTimeout(() => fail(new Error('no first-contentful-paint entry')), 10000);
})"""
SEARCH_JS = """async (args) => {
  const t = performance.now();
  const r = await fetch('/ui/api/search', {method: 'POST', headers: {'Content-Type':
    'application/json'}, body: JSON.stringify(args)});
  await r.json();
  return (performance.now() - t) / 1000;
}"""
GRAPH_JS = """async (n) => {
  const t = performance.now();
  document.querySelector('#graph').removeAttribute('data-nodes');
  location.hash = '#graph?path=topic00/doc0000.md&r=' + Math.random();
  await new Promise((done, fail) => {
    const limit = setTimeout(() => fail(new Error('the graph was not drawn')), 60000);
    const check = () => {
      if (document.querySelector('#graph').getAttribute('data-nodes') === String(n)) {
        clearTimeout(limit); done();
      } else requestAnimationFrame(check);
    };
    check();
  });
  await new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)));
  return (performance.now() - t) / 1000;
}"""


def _measure(port: int, repeats: int) -> dict[str, Any]:
    from playwright.sync_api import sync_playwright

    base = f"http://127.0.0.1:{port}"
    mcp = McpOverHttp(port)
    drawn = graph_of(GRAPH_NODES)
    graph, nodes = json.dumps(drawn), len(drawn["nodes"])
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS,
                                     timeout=DEADLINE * 1000)
        try:
            paints = []
            for _ in range(repeats):
                context = browser.new_context()
                page = context.new_page()
                page.set_default_timeout(DEADLINE * 1000)
                page.goto(base + "/ui", wait_until="load")
                paints.append(page.evaluate(PAINT_JS) / 1000)
                context.close()
            page = browser.new_page()
            page.goto(base + "/ui")
            page.evaluate(SEARCH_JS, {"query": "warm up", "limit": 5})
            mcp.search("warm up")
            page_s, mcp_s = [], []
            for q in QUERIES * repeats:  # interleaved, so load on the machine hits both alike
                mcp_s.append(mcp.search(q))
                page_s.append(page.evaluate(SEARCH_JS, {"query": q, "limit": 5}))
            page.route("**/ui/api/graph", lambda route: route.fulfill(
                status=200, content_type="application/json", body=graph))
            graph_s = [page.evaluate(GRAPH_JS, nodes) for _ in range(repeats)]
            render_ms = float(page.get_attribute("#graph", "data-render-ms") or 0)
        finally:
            browser.close()
    page_sum, mcp_sum = summary(page_s), summary(mcp_s)
    return {
        "first_paint_s": summary(paints),
        "page_search_s": page_sum,
        "mcp_search_s": mcp_sum,
        "search_ratio": page_sum["median"] / mcp_sum["median"],
        "graph_nodes": nodes,
        "graph_render_s": summary(graph_s),
        "graph_script_ms": render_ms,
    }


class McpOverHttp:
    """One MCP session on the same server, as a plain HTTP client: ``search`` times one
    ``tools/call`` round trip."""

    def __init__(self, port: int) -> None:
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=DEADLINE)
        self.headers = {"Content-Type": "application/json",
                        "Accept": "application/json, text/event-stream",
                        "MCP-Protocol-Version": "2025-11-25"}
        _, got = self._post({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "ui-bench", "version": "1"}}})
        if "mcp-session-id" in got:
            self.headers["Mcp-Session-Id"] = got["mcp-session-id"]
        self._post({"jsonrpc": "2.0", "method": "notifications/initialized"})
        self.ident = 0

    def _post(self, message: dict[str, Any]) -> tuple[bytes, dict[str, str]]:
        # the server may close the connection after an answer: reconnect (on loopback this
        # costs ~0.1 ms, far below a search)
        self.conn.close()
        self.conn.request("POST", "/mcp", json.dumps(message).encode(), self.headers)
        response = self.conn.getresponse()
        body = response.read()
        if response.status >= 300:
            raise RuntimeError(f"/mcp answered {response.status}: {body[:200]!r}")
        return body, {k.lower(): v for k, v in response.getheaders()}

    def search(self, query: str) -> float:
        self.ident += 1
        started = time.perf_counter()
        body, _ = self._post({"jsonrpc": "2.0", "id": self.ident, "method": "tools/call",
                              "params": {"name": "search",
                                         "arguments": {"query": query, "limit": 5}}})
        took = time.perf_counter() - started
        if b'"isError":true' in body.replace(b" ", b""):
            raise RuntimeError(f"search failed: {body[:200]!r}")
        return took
