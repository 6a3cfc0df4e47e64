"""One token, or one client address, holds at most so many HTTP sessions: opening one more
ends that holder's idlest session (its next request gets 404 "Session not found", so its
client starts a new one); every other holder's sessions go on working."""

from __future__ import annotations

import logging
from pathlib import Path

import anyio
import pytest

from kbmcp_adapters.mcp_server.auth import HashedTokenVerifier
from kbmcp_adapters.mcp_server.http_limits import HttpLimits
from kbmcp_adapters.mcp_server.tokens import token_hash
from tests.http_app_support import (
    MCP_HEADERS,
    client,
    error_of,
    open_session,
    ping,
    running,
    runtime_for,
    session_headers,
)

ALICE, BOB = "alice-token-0123456789", "bob-token-0123456789"


def test_a_token_past_its_cap_loses_its_idlest_session_and_no_one_else_s(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    rt = runtime_for(tmp_path / "kb")
    verifier = HashedTokenVerifier(None, (token_hash(ALICE), token_hash(BOB)))
    limits = HttpLimits(max_sessions_per_token=2, max_sessions_per_client=10)

    async def body() -> None:
        async with (running(rt, verifier=verifier, limits=limits) as app,
                    client(app, "10.0.0.1", ALICE) as alice,
                    client(app, "10.0.0.2", BOB) as bob):
            theirs = await open_session(bob)
            first, second = await open_session(alice), await open_session(alice)
            assert await ping(alice, first) == 200  # `second` is now alice's idlest
            third = await open_session(alice)
            gone = await alice.post("/mcp", json={"jsonrpc": "2.0", "id": 9, "method": "ping"},
                                    headers=session_headers(second))
            assert gone.status_code == 404
            assert error_of(gone)["message"] == "Session not found"
            assert [await ping(alice, s) for s in (first, third)] == [200, 200]
            assert await ping(bob, theirs) == 200
            again = await open_session(alice)  # what its client does next: a new session
            assert await ping(alice, again) == 200
            assert await ping(alice, first) == 404  # the idlest one went this time
            assert await ping(bob, theirs) == 200

    try:
        anyio.run(body)
    finally:
        rt.close()
    ended = [r.getMessage() for r in caplog.records if "its idlest" in r.getMessage()]
    assert len(ended) == 2, ended
    assert "of token 'env-1'" in ended[0] and "--max-sessions-per-token" in ended[0]
    assert ALICE not in caplog.text


def test_an_address_past_its_cap_loses_its_idlest_session(tmp_path: Path) -> None:
    rt = runtime_for(tmp_path / "kb")  # loopback with no token: the address is the holder
    limits = HttpLimits(max_sessions_per_client=3)

    async def body() -> None:
        async with (running(rt, limits=limits) as app, client(app, "10.0.0.7") as busy,
                    client(app, "10.0.0.8") as other):
            theirs = await open_session(other)
            mine = [await open_session(busy) for _ in range(3)]
            for session in (mine[0], mine[2]):
                assert await ping(busy, session) == 200  # mine[1] is the idlest
            newest = await open_session(busy)
            assert [await ping(busy, s) for s in mine] == [200, 404, 200]
            assert await ping(busy, newest) == 200
            assert await ping(other, theirs) == 200
            # a request that opens no session (no initialize) costs no one a session
            refused = await busy.post("/mcp", json={"jsonrpc": "2.0", "id": 3,
                                                    "method": "ping"}, headers=MCP_HEADERS)
            assert refused.status_code == 400
            assert [await ping(busy, s) for s in (mine[0], mine[2], newest)] == [200] * 3

    try:
        anyio.run(body)
    finally:
        rt.close()
