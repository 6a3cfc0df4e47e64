"""A hostile request body to the page's API (/ui/api/*) is a one-line 400, on one folder and
on several collections, as /mcp answers it: never a 500 with a traceback in the log."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from kbmcp_adapters.app.collections import open_collections
from kbmcp_adapters.app.config import build_settings
from kbmcp_adapters.mcp_server import KbRuntime
from kbmcp_adapters.mcp_server.host import Host
from tests.collections_support import TWO_COLLECTIONS
from tests.hashing_embedder import HashingEmbedder
from tests.http_app_support import MCP_HEADERS, client, error_of, running, runtime_for

#: Every /ui/api route that reads a request body.
BODY_ROUTES = ("search", "read", "graph", "rebuild")
#: About 2 KB: far below every size limit, far past any sensible depth.
NESTED = [b"[" * 1024 + b"]" * 1024,
          b'{"query": "x", "mode": ' + b'{"a": ' * 300 + b"1" + b"}" * 301]


@pytest.fixture(params=["one folder", "collections"])
def host(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[KbRuntime | Host]:
    if request.param == "one folder":
        rt = runtime_for(tmp_path / "kb")
        yield rt
        rt.close()
        return
    for name in ("alpha", "beta"):
        (tmp_path / name).mkdir()
    (tmp_path / "kb-mcp.toml").write_text(TWO_COLLECTIONS, encoding="utf-8")
    settings = build_settings(tmp_path / "kb-mcp.toml", user_config=False, env={})
    opened = open_collections(settings, embedder=HashingEmbedder(dimension=32))
    yield Host(opened)
    opened.close()


def test_deeply_nested_json_is_a_one_line_400_on_every_route(
        host: KbRuntime | Host, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)

    async def body() -> None:
        async with running(host) as app, client(app) as http:
            for route in BODY_ROUTES:
                for nested in NESTED:
                    answer = await http.post(f"/ui/api/{route}", content=nested,
                                             headers=MCP_HEADERS)
                    assert answer.status_code == 400, (route, answer.text)
                    error = error_of(answer)
                    assert error["code"] == "invalid_argument"
                    assert error["message"] == ("the request body nests arrays or objects "
                                                "deeper than 64 levels")
            # what the page sends is still answered, strings full of brackets included
            answer = await http.post("/ui/api/read", json={"uri": "kb://doc/" + "[{" * 100},
                                     headers=MCP_HEADERS)
            assert answer.status_code == 404, answer.text

    anyio.run(body)
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info]
