"""The local search socket (decision 0018): created safely with mode 0600, answering only its
own user, same version and configuration; stale sockets replaced, live ones left alone."""

from __future__ import annotations

import os
import select
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kbmcp_adapters.app.config import build_settings
from kbmcp_adapters.local_search import channel, client
from kbmcp_adapters.local_search.channel import SOCKET_NAME
from kbmcp_adapters.local_search.client import ask
from kbmcp_adapters.local_search.server import MAX_CLIENTS, LocalSearchServer
from kbmcp_core.settings import Settings

pytestmark = pytest.mark.skipif(not channel.supported(), reason="needs SO_PEERCRED")

ANSWER = {"results": [], "low_confidence": True, "filter_applied": {}}


def settings_at(root: Path, **values: Any) -> Settings:
    kb = root / "kb"
    (kb / ".kb-mcp").mkdir(parents=True, exist_ok=True)
    return build_settings(None, cwd=kb, kb_path=kb, **values)


class Recorder:
    """A search function that records what it was asked."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def __call__(self, query: str, params: dict[str, Any]) -> dict[str, Any]:
        self.calls.append((query, params))
        return {**ANSWER, "notice": f"answered {query}"}


@pytest.fixture
def servers() -> Iterator[list[LocalSearchServer]]:
    started: list[LocalSearchServer] = []
    yield started
    for server in started:
        server.close()


def start(settings: Settings, servers: list[LocalSearchServer],
          search: Any = None, **kw: Any) -> LocalSearchServer:
    server = LocalSearchServer(settings, search or Recorder(), **kw)
    server.listen()
    servers.append(server)
    return server


def stale_socket_at(path: Path) -> None:
    """What a killed server leaves: a socket file nobody listens on."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.bind(str(path))


def test_a_search_is_answered_over_a_0600_socket_that_close_removes(
    tmp_path: Path, servers: list[LocalSearchServer]
) -> None:
    settings = settings_at(tmp_path)
    search = Recorder()
    server = start(settings, servers, search)
    path = settings.index_dir / SOCKET_NAME
    mode = os.lstat(path).st_mode
    assert stat.S_ISSOCK(mode) and stat.S_IMODE(mode) == 0o600
    assert sorted(os.listdir(settings.index_dir)) == [SOCKET_NAME]  # no private folder left

    reply = ask(settings, "vault keys", {"limit": 3, "mode": "lexical"})
    assert reply.response == {**ANSWER, "notice": "answered vault keys"}
    assert reply.server_pid == os.getpid()
    assert search.calls == [("vault keys", {"limit": 3, "mode": "lexical"})]

    server.close()
    assert not path.exists()
    assert ask(settings, "vault", {}).response is None


def test_no_socket_means_search_locally(tmp_path: Path) -> None:
    reply = ask(settings_at(tmp_path), "vault", {})
    assert reply.response is None and "no server socket" in reply.note


def test_a_stale_socket_is_ignored_by_the_client_and_replaced_by_the_next_server(
    tmp_path: Path, servers: list[LocalSearchServer]
) -> None:
    settings = settings_at(tmp_path)
    stale_socket_at(settings.index_dir / SOCKET_NAME)
    reply = ask(settings, "vault", {})
    assert reply.response is None and "stale" in reply.note

    start(settings, servers)
    assert ask(settings, "vault", {}).response is not None


def test_a_live_socket_is_left_to_its_server(
    tmp_path: Path, servers: list[LocalSearchServer]
) -> None:
    settings = settings_at(tmp_path)
    first = Recorder()
    start(settings, servers, first)
    assert LocalSearchServer.start(settings, Recorder()) is None
    assert ask(settings, "vault", {}).response is not None
    assert len(first.calls) == 1


def test_a_file_that_is_not_a_socket_is_never_replaced(tmp_path: Path) -> None:
    settings = settings_at(tmp_path)
    (settings.index_dir / SOCKET_NAME).write_text("mine")
    assert LocalSearchServer.start(settings, Recorder()) is None
    assert (settings.index_dir / SOCKET_NAME).read_text() == "mine"
    assert sorted(os.listdir(settings.index_dir)) == [SOCKET_NAME]


def test_close_leaves_a_socket_another_server_put_in_its_place(
    tmp_path: Path, servers: list[LocalSearchServer]
) -> None:
    settings = settings_at(tmp_path)
    server = start(settings, servers)
    path = settings.index_dir / SOCKET_NAME
    path.unlink()
    stale_socket_at(path)  # someone else's socket now holds the name
    server.close()
    assert stat.S_ISSOCK(os.lstat(path).st_mode)


def test_another_version_or_configuration_is_declined(
    tmp_path: Path, servers: list[LocalSearchServer], monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = settings_at(tmp_path)
    search = Recorder()
    start(settings, servers, search)
    other = settings_at(tmp_path, search_default_limit=9)
    reply = ask(other, "vault", {})
    assert reply.response is None and "another configuration" in reply.note

    monkeypatch.setattr(channel, "_version", "0.0.0-other")
    reply = ask(settings, "vault", {})
    assert reply.response is None and "kb-mcp 0.0.0-other" in reply.note
    assert search.calls == []


def test_a_failed_search_is_declined_so_the_client_searches_itself(
    tmp_path: Path, servers: list[LocalSearchServer]
) -> None:
    def broken(query: str, params: dict[str, Any]) -> dict[str, Any]:
        raise ValueError("date_from must be YYYY-MM-DD")

    settings = settings_at(tmp_path)
    start(settings, servers, broken)
    reply = ask(settings, "vault", {"date_from": "soon"})
    assert reply.response is None and "YYYY-MM-DD" in reply.note


def test_a_peer_of_another_uid_is_refused(
    tmp_path: Path, servers: list[LocalSearchServer]
) -> None:
    """The server-side SO_PEERCRED check: the server answers only ``uid`` (here one the
    test process does not run as, so this process is "another user")."""
    settings = settings_at(tmp_path)
    search = Recorder()
    start(settings, servers, search, uid=os.geteuid() + 4242)
    reply = ask(settings, "vault", {})
    assert reply.response is None and "another user" in reply.note
    assert search.calls == []


def wait_until_the_server_hung_up(sock: socket.socket, deadline_s: float = 10.0) -> None:
    """Block until the peer of ``sock`` has closed its end (POLLRDHUP)."""
    poller = select.poll()
    poller.register(sock, select.POLLIN | select.POLLRDHUP)
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        for _, events in poller.poll(100):
            if events & (select.POLLRDHUP | select.POLLHUP):
                return
    raise AssertionError("the server never closed the connection")


@pytest.mark.parametrize("refusal", ["another user", "busy"])
def test_a_refusal_sent_before_the_request_is_the_answer(
    tmp_path: Path, servers: list[LocalSearchServer], monkeypatch: pytest.MonkeyPatch,
    refusal: str,
) -> None:
    """A server refuses another user, or a client past its MAX_CLIENTS, without reading
    the request, and closes. The client whose request comes after that close (about one
    run in twelve by chance; here every time) still reads the refusal: its failed write
    (EPIPE) is not the answer."""
    settings = settings_at(tmp_path)
    search = Recorder()
    held: list[socket.socket] = []
    if refusal == "another user":
        start(settings, servers, search, uid=os.geteuid() + 4242)
    else:
        start(settings, servers, search)
        for _ in range(MAX_CLIENTS):  # each holds a slot until it sends or hangs up
            held.append(socket.socket(socket.AF_UNIX, socket.SOCK_STREAM))
            held[-1].connect(str(settings.index_dir / SOCKET_NAME))
    real = channel.peer_credentials

    def after_the_server_hung_up(sock: socket.socket) -> tuple[int, int, int]:
        wait_until_the_server_hung_up(sock)
        return real(sock)

    monkeypatch.setattr(channel, "peer_credentials", after_the_server_hung_up)
    try:
        reply = ask(settings, "vault", {})
    finally:
        for sock in held:
            sock.close()
    assert reply.response is None
    assert f"declined: {refusal}" in reply.note, reply.note
    assert search.calls == []


def test_a_long_index_path_still_gets_a_socket(
    tmp_path: Path, servers: list[LocalSearchServer]
) -> None:
    deep = tmp_path / ("d" * 60) / ("e" * 60)
    settings = settings_at(deep)
    assert len(str(settings.index_dir / SOCKET_NAME)) > 108
    start(settings, servers)
    assert ask(settings, "vault", {}).response is not None


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("setpriv") is None,
                    reason="needs root and setpriv to act as another user")
def test_another_real_user_cannot_connect_nor_be_answered(
    servers: list[LocalSearchServer]
) -> None:
    """As uid 65534: mode 0600 keeps the socket shut; with the mode opened by mistake,
    the server's credential check still refuses."""
    root = Path(tempfile.mkdtemp(prefix="kb-local-socket-"))
    try:
        os.chmod(root, 0o755)
        settings = settings_at(root)
        for folder in (root / "kb", settings.index_dir):
            os.chmod(folder, 0o755)
        search = Recorder()
        start(settings, servers, search)
        path = settings.index_dir / SOCKET_NAME
        probe = (
            "import json, socket, sys\n"
            "s = socket.socket(socket.AF_UNIX)\n"
            "try:\n    s.connect(sys.argv[1])\n"
            "except PermissionError:\n    print('permission denied'); sys.exit()\n"
            "print(s.makefile('rb').readline().decode())\n"
        )

        def as_nobody() -> str:
            done = subprocess.run(
                ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                 sys.executable, "-I", "-c", probe, str(path)],
                capture_output=True, text=True, timeout=60, check=False)
            assert done.returncode == 0, done.stderr
            return done.stdout

        assert as_nobody().strip() == "permission denied"
        os.chmod(path, 0o666)
        assert '"reason":"another user"' in as_nobody()
        assert search.calls == []
    finally:
        shutil.rmtree(root, ignore_errors=True)


def test_the_fast_routes_copies_of_the_settings_names_are_the_settings_names() -> None:
    from kbmcp_core import settings

    assert channel.INDEX_DIR_NAME == settings.INDEX_DIR_NAME
    assert channel.CONFIG_FILE_NAME == settings.CONFIG_FILE_NAME


def test_a_server_builds_the_settings_of_a_client_without_a_config_file(
    tmp_path: Path, servers: list[LocalSearchServer], user_config_home: Path
) -> None:
    """The fast route sends --kb-path and its working folder; the server reads the same
    configuration from them: a kb-mcp.toml in the working folder is not the knowledge
    base's (decision 0021), nor is the server's own user config; one in the knowledge
    base makes it another configuration."""
    settings = settings_at(tmp_path)
    start(settings, servers)
    here, there = tmp_path / "here", tmp_path / "there"
    here.mkdir()
    there.mkdir()
    (there / "kb-mcp.toml").write_text("[search]\ndefault_limit = 2\n")
    (user_config_home / "kb-mcp").mkdir()
    (user_config_home / "kb-mcp" / "config.toml").write_text("[search]\ndefault_limit = 3\n")

    def via(cwd: Path) -> client.Reply:
        return client.ask_with_inputs(settings.index_dir, str(settings.kb_path),
                                            str(cwd), "vault", {})

    assert via(here).response is not None
    assert via(there).response is not None
    (settings.kb_path / "kb-mcp.toml").write_text("[search]\ndefault_limit = 2\n")
    declined = via(here)
    assert declined.response is None and "another configuration" in declined.note
