"""Bearer tokens that are not accepted are counted per client address: logged in a few
lines with their count (never the token), and an address that sends too many gets 429
with Retry-After, whatever token it sends next, while every other address is answered as
before."""

from __future__ import annotations

import logging
from pathlib import Path

import anyio
import pytest

from kbmcp_adapters.mcp_server.auth import HashedTokenVerifier
from kbmcp_adapters.mcp_server.auth_failures import FailedTokens
from kbmcp_adapters.mcp_server.http_proxy import parse_trusted_proxies
from kbmcp_adapters.mcp_server.tokens import token_hash
from tests.http_app_support import client, running, runtime_for

GOOD = "good-token-0123456789"
GUESSES = [f"guess-{i:04d}-secret" for i in range(40)]


class Clock:
    """Seconds that pass when the test says so."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def failure_lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records
            if r.name.endswith("auth_failures") and r.levelno == logging.WARNING]


def test_repeated_failures_from_one_address_are_held_back_and_logged_in_few_lines(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    rt = runtime_for(tmp_path / "kb")
    verifier = HashedTokenVerifier(None, (token_hash(GOOD),))
    clock = Clock()
    failures = FailedTokens(allowed=10, window_s=60.0, log_every_s=60.0, clock=clock)

    async def body() -> None:
        async with running(rt, verifier=verifier, failed_tokens=failures) as app:
            guessed = iter(GUESSES)
            for _ in range(9):
                async with client(app, "10.0.0.66", next(guessed)) as guesser:
                    assert (await guesser.get("/ui/api/topics")).status_code == 401
            assert len(failure_lines(caplog)) == 1  # the first, not one per request
            async with client(app, "10.0.0.66", next(guessed)) as guesser:  # /mcp counts too
                assert (await guesser.post("/mcp", json={})).status_code == 401
            for token in (next(guessed), GOOD):  # held back, whatever the token
                async with client(app, "10.0.0.66", token) as guesser:
                    held = await guesser.get("/ui/api/topics")
                    assert held.status_code == 429, held.text
                    assert held.headers["retry-after"] == "60"
                    assert "try again in 60s" in held.json()["error"]
            async with client(app, "10.0.0.66") as no_token:  # nothing guessed: a 401
                assert (await no_token.get("/ui/api/topics")).status_code == 401
            async with client(app, "10.0.0.67", "wrong-token-elsewhere") as other:
                assert (await other.get("/ui/api/topics")).status_code == 401
            async with client(app, "10.0.0.68", GOOD) as honest:
                assert (await honest.get("/ui/api/progress")).status_code == 200
            clock.now += 45
            async with client(app, "10.0.0.66", GOOD) as guesser:
                assert (await guesser.get("/ui/api/topics")).headers["retry-after"] == "15"
            clock.now += 15  # held back no longer
            async with client(app, "10.0.0.66", GOOD) as guesser:
                assert (await guesser.get("/ui/api/progress")).status_code == 200
            for _ in range(3):
                async with client(app, "10.0.0.66", next(guessed)) as guesser:
                    assert (await guesser.get("/ui/api/topics")).status_code == 401

    try:
        anyio.run(body)
    finally:
        rt.close()
    lines = failure_lines(caplog)
    assert [line.split(" ")[0:3] for line in lines[:1]] == [["refused", "1", "request(s)"]]
    assert "10.0.0.66 sent 10 bearer tokens that are not accepted within 60s" in lines[1]
    assert "answered 429 for the next 60s" in lines[1]
    assert "refused 1 request(s) from 10.0.0.67" in lines[2]
    assert "refused 1 request(s) from 10.0.0.66" in lines[3] and "in the 60s since" in lines[3]
    assert len(lines) == 4, lines  # the two failures after that wait for the next minute
    assert not any(g in caplog.text for g in [*GUESSES, GOOD, "wrong-token-elsewhere"])


def test_behind_a_trusted_proxy_each_client_address_is_counted_alone(tmp_path: Path) -> None:
    rt = runtime_for(tmp_path / "kb")
    verifier = HashedTokenVerifier(None, (token_hash(GOOD),))
    failures = FailedTokens(allowed=3, clock=Clock())
    proxy = parse_trusted_proxies(["10.0.0.5"])

    async def body() -> None:
        async with (running(rt, verifier=verifier, failed_tokens=failures,
                            trusted_proxies=proxy) as app,
                    client(app, "10.0.0.5") as through_proxy):
            def sent(token: str, address: str) -> dict[str, str]:
                return {"Authorization": f"Bearer {token}", "X-Forwarded-For": address}

            for guess in GUESSES[:3]:
                answer = await through_proxy.get("/ui/api/topics",
                                                 headers=sent(guess, "198.51.100.1"))
                assert answer.status_code == 401
            held = await through_proxy.get("/ui/api/topics", headers=sent(GOOD, "198.51.100.1"))
            assert held.status_code == 429
            fine = await through_proxy.get("/ui/api/progress", headers=sent(GOOD, "198.51.100.2"))
            assert fine.status_code == 200

    try:
        anyio.run(body)
    finally:
        rt.close()


def test_the_table_of_addresses_stays_bounded() -> None:
    failures = FailedTokens(allowed=2, max_addresses=100, clock=Clock())
    for i in range(1000):
        failures.failed(f"10.1.{i // 256}.{i % 256}")
        failures.failed(f"10.1.{i // 256}.{i % 256}")
    assert failures.retry_after("10.1.3.231") == 60  # the latest is still held back
    assert failures.retry_after("10.1.0.0") is None  # the oldest was let go
    assert len(failures) == 100
