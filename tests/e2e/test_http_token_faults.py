"""A token-protected server under a damaged tokens file, a revoked token's open stream, and
the set-ups that used to end unauthenticated by accident: every one fails closed."""

from __future__ import annotations

import http.client
import json
import os
import queue
import re
import shutil
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from kbmcp_adapters.mcp_server.tokens import add_token, token_hash
from tests.e2e.conftest import DEADLINE, Env, LineReader, kb_mcp_command, stop, write
from tests.e2e.http_support import (
    PROTOCOL,
    Served,
    environment,
    initialize_params,
    serve,
    start,
)

INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": initialize_params()}
#: What the attacker's hand-made file lets in, unless the server refuses the file.
INTRUDER = "kbm_the-other-local-user"


@pytest.fixture(scope="module")
def plain_kb(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """No index needed: only access control is under test (servers get --no-index)."""
    kb = tmp_path_factory.mktemp("token-faults") / "kb"
    write(kb, "a.md", "# A\n\nalpha\n")
    return kb


@pytest.fixture()
def servers() -> Iterator[list[Served]]:
    started: list[Served] = []
    yield started
    for running in started:
        stop(running.proc)


def status_of(served: Served, method: str, path: str, body: object = None,
              token: str | None = None, source: str = "127.0.0.1") -> int:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return served.request(method, path, body, headers, source)[0]


def guarded_calls(served: Served, token: str | None = None, source: str = "127.0.0.1",
                  ) -> list[int]:
    """The statuses of /mcp, /ui/api/topics and /ui/api/read."""
    return [status_of(served, "POST", "/mcp", INIT, token, source),
            status_of(served, "GET", "/ui/api/topics", None, token, source),
            status_of(served, "POST", "/ui/api/read", {"uri": "kb://doc/a.md"}, token, source)]


def intruder_file(path: Path) -> None:
    """A well-formed tokens file holding the intruder's hash."""
    path.write_text(json.dumps({"format": 1, "tokens": [
        {"name": "intruder", "created": "2026-01-01T00:00:00Z",
         "hash": token_hash(INTRUDER)}]}), encoding="utf-8")


def remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    elif path.exists() or path.is_symlink():
        path.unlink()


def truncated(path: Path) -> None:
    path.write_text('{"format": 1, "tokens": [', encoding="utf-8")


def emptied(path: Path) -> None:
    path.write_bytes(b"")


def linked(path: Path) -> None:
    elsewhere = path.with_name("elsewhere.json")
    intruder_file(elsewhere)
    elsewhere.chmod(0o600)
    path.unlink()
    path.symlink_to(elsewhere)


def folder(path: Path) -> None:
    path.unlink()
    path.mkdir()


def world_writable(path: Path) -> None:
    intruder_file(path)
    path.chmod(0o666)


def group_writable(path: Path) -> None:
    intruder_file(path)
    path.chmod(0o620)


def foreign_owner(path: Path) -> None:
    intruder_file(path)
    path.chmod(0o600)
    os.chown(path, 65534, 65534)


def deleted(path: Path) -> None:
    path.unlink()


DAMAGES: dict[str, Callable[[Path], None]] = {
    "truncated": truncated, "empty": emptied, "symlink": linked, "folder": folder,
    "world-writable": world_writable, "group-writable": group_writable,
    "foreign-owner": foreign_owner, "deleted": deleted,
}


#: The damages a server meets in turn, in two servers: a server logs at most five lines of
#: one kind a minute (``RepeatFilter``), and each damage is one line of the same kind.
DAMAGE_TURNS = [sorted(DAMAGES)[0::2], sorted(DAMAGES)[1::2]]


@pytest.mark.parametrize("damages", DAMAGE_TURNS, ids=["-".join(d) for d in DAMAGE_TURNS])
def test_a_tokens_file_damaged_while_serving_fails_closed_each_way_and_a_repair_reopens_it(
        damages: list[str], plain_kb: Path, server_env: Env, tmp_path: Path,
        servers: list[Served]) -> None:
    """A server meets damages in turn: each fails closed with one ERROR line naming the
    file (not one per request), and the file written again is used again."""
    if os.geteuid() != 0:  # giving a file to another user needs root
        damages = [d for d in damages if d != "foreign-owner"]
    tokens_file = tmp_path / "tokens.json"
    token, _ = add_token(tokens_file, "laptop")
    served = start(plain_kb, environment(server_env), "--no-watch", "--no-index",
                   "--tokens-file", str(tokens_file))
    servers.append(served)
    for turn, damage in enumerate(damages):
        if turn:  # repaired: a new token is accepted, and the log says so
            remove(tokens_file)
            token, _ = add_token(tokens_file, "laptop")
        assert guarded_calls(served) == [401, 401, 401], damage
        assert guarded_calls(served, token) == [200, 200, 404], damage  # a.md: not indexed
        if turn:
            seen(served, r"WARNING: tokens file .* is usable again", turn)

        DAMAGES[damage](tokens_file)
        # each damage's refused tokens come from loopback addresses of their own: an
        # address sending more than ten in a minute is held back (429), by design
        for _ in range(3):
            assert guarded_calls(served) == [401, 401, 401], damage
            assert guarded_calls(served, INTRUDER, f"127.0.1.{turn + 1}") == [401] * 3, damage
            assert guarded_calls(served, token, f"127.0.2.{turn + 1}") == [401] * 3, damage
            assert status_of(served, "GET", "/healthz") == 200
        errors = seen(served, "ERROR", turn + 1)
        assert str(tokens_file) in errors[-1] and "refused" in errors[-1], (damage, errors)
    stop(served.proc)
    log = served.log.drain()
    errors = [line for line in log.splitlines() if "ERROR" in line]
    assert len(errors) == len(damages), log  # one line a damage, not one per request
    assert "Traceback" not in log


def seen(served: Served, pattern: str, count: int) -> list[str]:
    """The server's log lines matching ``pattern``, once there are ``count`` of them."""
    end = time.monotonic() + DEADLINE
    while len(found := [x for x in served.log.lines if re.search(pattern, x)]) < count:
        left = end - time.monotonic()
        try:
            assert left > 0 and served.log.next_line(left) is not None
        except (AssertionError, queue.Empty):
            raise AssertionError(f"{count} lines matching {pattern!r} awaited; the log:\n"
                                 + "".join(served.log.lines)) from None
    return found


def test_revoking_a_token_ends_its_open_event_stream(
        plain_kb: Path, server_env: Env, tmp_path: Path, servers: list[Served]) -> None:
    tokens_file = tmp_path / "tokens.json"
    add_token(tokens_file, "keep")  # the server keeps requiring tokens after the revoke
    token, _ = add_token(tokens_file, "laptop")
    served = start(plain_kb, environment(server_env), "--no-watch", "--no-index",
                   "--tokens-file", str(tokens_file))
    servers.append(served)
    auth = {"Authorization": f"Bearer {token}"}
    status, headers, _ = served.request("POST", "/mcp", INIT, auth)
    assert status == 200
    session = {**auth, "mcp-session-id": headers["mcp-session-id"],
               "MCP-Protocol-Version": PROTOCOL}
    note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    assert served.request("POST", "/mcp", note, session)[0] == 202

    conn = http.client.HTTPConnection("127.0.0.1", served.port, timeout=30)
    try:
        conn.request("GET", "/mcp", headers={**session, "Accept": "text/event-stream"})
        stream = conn.getresponse()
        assert stream.status == 200
        assert stream.getheader("content-type", "").startswith("text/event-stream")
        revoked = subprocess.run(
            [*kb_mcp_command(), "token", "revoke", "laptop", "--tokens-file",
             str(tokens_file)], env=environment(server_env), capture_output=True,
            text=True, timeout=DEADLINE, check=False)
        assert revoked.returncode == 0, revoked.stderr
        stream.read()  # returns once the server ends the stream; a timeout fails the test
    finally:
        conn.close()
    served.log.wait_for(r"WARNING: token 'laptop' is no longer accepted")
    assert status_of(served, "POST", "/mcp", INIT, token) == 401
    stop(served.proc)
    log = served.log.drain()
    assert "Traceback" not in log and "ERROR" not in log, log


def test_revoking_the_last_token_keeps_a_running_server_closed(
        plain_kb: Path, server_env: Env, tmp_path: Path, servers: list[Served]) -> None:
    tokens_file = tmp_path / "tokens.json"
    add_token(tokens_file, "only")
    served = start(plain_kb, environment(server_env), "--no-watch", "--no-index",
                   "--tokens-file", str(tokens_file))
    servers.append(served)
    assert guarded_calls(served) == [401, 401, 401]
    revoked = subprocess.run(
        [*kb_mcp_command(), "token", "revoke", "only", "--tokens-file", str(tokens_file)],
        env=environment(server_env), capture_output=True, text=True, timeout=DEADLINE,
        check=False)
    assert revoked.returncode == 0
    assert "last token" in revoked.stderr and "until it is restarted" in revoked.stderr
    assert guarded_calls(served) == [401, 401, 401]


def test_an_unsafe_tokens_file_stops_the_server_at_start(
        plain_kb: Path, server_env: Env, tmp_path: Path) -> None:
    tokens_file = tmp_path / "tokens.json"
    add_token(tokens_file, "laptop")
    tokens_file.chmod(0o666)
    proc = serve(plain_kb, environment(server_env), "--no-watch",
                 "--tokens-file", str(tokens_file))
    assert proc.stderr is not None
    log = LineReader(proc.stderr)
    try:
        assert proc.wait(timeout=DEADLINE) == 2
    finally:
        stop(proc)
    err = log.drain()
    refusals = [line for line in err.splitlines() if str(tokens_file) in line]
    assert len(refusals) == 1 and "writable by other users" in refusals[0], err
    assert "Traceback" not in err and "serving MCP" not in err


def test_without_a_token_loopback_serves_with_one_warning_line(
        plain_kb: Path, server_env: Env, tmp_path: Path, servers: list[Served]) -> None:
    served = start(plain_kb, environment(server_env), "--no-watch", "--no-index",
                   "--tokens-file", str(tmp_path / "absent.json"))
    servers.append(served)
    warned = [line for line in served.log.lines if "NO AUTHENTICATION" in line]
    assert len(warned) == 1 and "WARNING" in warned[0], served.log.lines
    assert "kb-mcp token create" in warned[0]
    assert guarded_calls(served)[:2] == [200, 200]


def test_a_remote_read_only_replica_always_needs_a_token(
        plain_kb: Path, server_env: Env, tmp_path: Path) -> None:
    proc = serve(plain_kb, environment(server_env), "--no-watch", "--read-only",
                 "--host", "0.0.0.0", "--allow-remote", "--insecure-no-auth",
                 "--tokens-file", str(tmp_path / "absent.json"))
    try:
        _, err = proc.communicate(timeout=DEADLINE)
    finally:
        stop(proc)
    assert proc.returncode == 2, err
    refusal = [line for line in err.splitlines() if "--read-only replica" in line]
    assert len(refusal) == 1 and "kb-mcp token create" in refusal[0], err
    assert "Traceback" not in err and not re.search(r"serving MCP", err)


def test_the_config_names_the_tokens_file_of_an_empty_replica_folder(
        tmp_path: Path, server_env: Env, servers: list[Served]) -> None:
    """A replica whose kb_path is an empty folder finds the team's tokens through
    ``[server].tokens_file`` (relative to the config's folder)."""
    kb = tmp_path / "empty-kb"
    kb.mkdir()
    team = tmp_path / "team"
    team.mkdir()
    config = team / "kb-mcp.toml"
    config.write_text(f'kb_path = "{kb}"\n\n[server]\ntokens_file = "tokens.json"\n',
                      encoding="utf-8")
    made = subprocess.run([*kb_mcp_command(), "token", "create", "ci", "--config", str(config)],
                          env=environment(server_env), capture_output=True, text=True,
                          timeout=DEADLINE, check=False)
    assert made.returncode == 0, made.stderr
    assert (team / "tokens.json").is_file() and not (kb / ".kb-mcp").exists()
    proc = subprocess.Popen(
        [*kb_mcp_command(), "serve", "--config", str(config), "--transport", "http",
         "--port", "0", "--no-watch"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE, text=True, encoding="utf-8", env=environment(server_env))
    assert proc.stderr is not None
    log = LineReader(proc.stderr)
    served = Served(proc, log, 0)
    servers.append(served)
    served.port = int(log.wait_for(r"streamable HTTP at http://\S+?:(\d+)/mcp").group(1))
    assert guarded_calls(served) == [401, 401, 401]
    assert guarded_calls(served, made.stdout.strip())[:2] == [200, 200]
    assert not [line for line in log.lines if "NO AUTHENTICATION" in line]

