"""/ui over the real HTTP server: its protections (CSP, Host/Origin, tokens), and that its
JSON API answers exactly what the MCP surface answers."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from kbmcp_adapters.mcp_server.tokens import add_token
from tests.e2e.conftest import DEADLINE, Env, stop, text_of
from tests.e2e.http_support import Served, environment, start
from tests.e2e.ui_support import HOSTILE_TITLE, NOT_OFFERED

QUERY = "signing keys rotation"


def api(served: Served, name: str, body: Any = None, headers: dict[str, str] | None = None
        ) -> tuple[int, Any]:
    method = "GET" if body is None else "POST"
    status, _, raw = served.request(method, f"/ui/api/{name}", body, headers)
    return status, json.loads(raw)


async def mcp_calls(url: str, token: str | None = None) -> dict[str, Any]:
    """What an MCP client gets: a search, resources/list, and graphs."""
    headers = {"Authorization": f"Bearer {token}"} if token else None
    http = create_mcp_http_client(headers=headers)
    async with (http, Client(streamable_http_client(url, http_client=http), mode="legacy",
                             read_timeout_seconds=DEADLINE) as client):
        search = await client.call_tool("search", {"query": QUERY, "limit": 6})
        listed = await client.list_resources()
        graph = await client.call_tool("get_connection_graph",
                                       {"path": "guides/keys.md", "threshold": 0.0,
                                        "depth": 2, "fan_out": 20})
        refused = await client.call_tool("get_connection_graph", {"path": NOT_OFFERED})
        return {"search": text_of(search), "resources": [r.uri for r in listed.resources],
                "graph": text_of(graph), "refused": text_of(refused),
                "refused_is_error": refused.is_error}


def test_the_page_is_static_and_locked_down(served: Served) -> None:
    for path, kind in (("/ui", "text/html"), ("/ui/app.js", "text/javascript"),
                       ("/ui/app.css", "text/css")):
        status, headers, body = served.request("GET", path)
        assert status == 200 and headers["content-type"].startswith(kind)
        csp = headers["content-security-policy"]
        for rule in ("default-src 'none'", "script-src 'self'", "style-src 'self'",
                     "connect-src 'self'", "frame-ancestors 'none'"):
            assert rule in csp
        assert "unsafe-inline" not in csp and "unsafe-eval" not in csp
        assert headers["x-content-type-options"] == "nosniff"
        assert headers["referrer-policy"] == "no-referrer"
        assert b"Rotating signing keys" not in body  # no data in the static files
    page = served.request("GET", "/ui")[2].decode()
    assert "<script>" not in page and " style=" not in page  # nothing inline for the CSP
    assert "http://" not in page.replace('xmlns="http://www.w3.org/2000/svg"', "")

    status, _, _ = served.request("GET", "/ui", headers={"Host": "evil.example:80"})
    assert status == 403
    status, _ = api(served, "search", {"query": QUERY},
                    {"Origin": "http://evil.example"})
    assert status == 403


def test_the_api_answers_what_mcp_answers(served: Served) -> None:
    mcp = anyio.run(mcp_calls, served.url)
    status, page_search = api(served, "search", {"query": QUERY, "limit": 6})
    assert status == 200
    assert page_search["results"] == mcp["search"]["results"]  # the same hits, same scores
    hostile = [h for h in page_search["results"] if h["path"] == "notes/hostile.md"]
    assert hostile and hostile[0]["title"] == HOSTILE_TITLE  # data, as it is: the page escapes
    not_offered = [h for h in page_search["results"] if h["path"] == NOT_OFFERED]
    assert not_offered and "uri" not in not_offered[0]

    status, lexical = api(served, "search", {"query": QUERY, "mode": "lexical"})
    assert status == 200 and lexical["results"]
    status, bad = api(served, "search", {"query": QUERY, "mode": "psychic"})
    assert status == 400 and bad["error"]["code"] == "invalid_argument"
    status, bad = api(served, "search", {"query": QUERY, "limit": 0})
    assert status == 400 and "'limit' must be between 1 and 50" in bad["error"]["message"]

    status, topics = api(served, "topics")
    assert [t["uri"] for t in topics["topics"]] == mcp["resources"]
    listed = [d["path"] for t in topics["topics"] for d in t["documents"]]
    assert "guides/keys.md" in listed and NOT_OFFERED not in listed

    status, graph = api(served, "graph", {"path": "guides/keys.md", "threshold": 0.0,
                                          "depth": 2, "fan_out": 20})
    assert status == 200 and graph == mcp["graph"]
    paths = [n["path"] for n in graph["nodes"]]
    assert paths[0] == "guides/keys.md" and "guides/key-rollback.md" in paths
    assert NOT_OFFERED not in paths  # the nearest of all, but not offered
    assert mcp["refused_is_error"] and mcp["refused"]["error"]["code"] == "path_refused"
    status, refused = api(served, "graph", {"path": NOT_OFFERED})
    assert status == 404 and refused["error"]["code"] == "path_refused"
    status, bad = api(served, "graph", {"path": "guides/keys.md", "depth": 99})
    assert status == 400 and "'depth'" in bad["error"]["message"]


def test_reads_go_through_the_kb_doc_guard_chain(served: Served) -> None:
    status, doc = api(served, "read", {"uri": "kb://doc/guides/keys.md"})
    assert status == 200 and doc["mime_type"] == "text/markdown"
    assert "Rotate the signing keys every 90 days" in doc["text"]
    status, refused = api(served, "read", {"uri": f"kb://doc/{NOT_OFFERED}"})
    assert status == 404
    assert refused["error"] == {"code": "not_found", "message": "Resource not found",
                                "reason": "not offered by this knowledge base"}
    status, refused = api(served, "read", {"uri": "kb://doc/%2e%2e/secret.md"})
    assert status == 404 and "launch codes" not in json.dumps(refused)
    status, bad = api(served, "read", {"uri": "file:///etc/passwd"})
    assert status == 400


def test_health_is_status_plus_doctor_with_remedies(served: Served) -> None:
    status, health = api(served, "health")
    assert status == 200
    assert health["status"]["documents"] == 49 and health["status"]["model"]
    checks = {f["check"]: f for f in health["doctor"]["findings"]}
    dropped = checks["extension-not-enabled"]  # the .txt format was dropped after indexing
    assert NOT_OFFERED in dropped["samples"] and dropped["remedy"]
    assert health["progress"] is None


def test_with_a_token_every_data_call_needs_it_and_the_page_itself_does_not(
        ui_kb: Path, server_env: Env, tmp_path: Path) -> None:
    tokens = tmp_path / "tokens.json"
    token, _ = add_token(tokens, "page")
    running = start(ui_kb, environment(server_env), "--no-watch", "--tokens-file", str(tokens))
    try:
        assert running.request("GET", "/ui")[0] == 200  # static: no data
        for name, body in (("search", {"query": QUERY}), ("read", {"uri": "kb://doc/readme.md"}),
                           ("graph", {"path": "readme.md"}), ("topics", None),
                           ("health", None), ("progress", None), ("rebuild", {})):
            status, headers, raw = running.request("POST" if body is not None else "GET",
                                                   f"/ui/api/{name}", body)
            assert status == 401, name
            assert headers["www-authenticate"].startswith("Bearer ")
            assert b"signing" not in raw
        auth = {"Authorization": f"Bearer {token}"}
        status, hits = api(running, "search", {"query": QUERY}, auth)
        assert status == 200 and hits["results"][0]["path"] == "guides/keys.md"
        status, _ = api(running, "topics", None, {"Authorization": "Bearer kbm_wrong"})
        assert status == 401
    finally:
        stop(running.proc)
        running.log.drain()
