"""`kb-mcp search` asks a running `kb-mcp serve` / `kb-mcp watch` of the same index over its
local socket, prints exactly what a local search prints, and searches itself whenever
that server cannot answer (decision 0018)."""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from kbmcp_adapters.local_search.channel import SOCKET_NAME, supported
from tests.e2e.conftest import DEADLINE, Env, LineReader, kb_mcp_command, stop
from tests.store_faults import kb_mcp_here

pytestmark = pytest.mark.skipif(not supported(), reason="needs Unix sockets with SO_PEERCRED")


def socket_of(kb: Path) -> Path:
    return kb / ".kb-mcp" / SOCKET_NAME


def kb_search(kb: Path, env: Env, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*kb_mcp_command(), "search", "--kb-path", str(kb), *args],
                          env={**os.environ, **env}, capture_output=True, text=True,
                          timeout=DEADLINE, check=False)


def searched_here(kb: Path, env: Env, *args: str) -> subprocess.CompletedProcess[str]:
    """``kb-mcp search --no-server`` in this process: what the server's answer must equal
    (the process that talks to the server is ``kb_search``'s)."""
    return kb_mcp_here(["search", "--kb-path", str(kb), *args, "--no-server"],
                       {**os.environ, **env})


def answered_by(pid: int) -> str:
    return f"answered by the kb-mcp server (pid {pid})"


class Server:
    """A `kb-mcp serve` or `kb-mcp watch` subprocess, stopped by the test."""

    def __init__(self, kb: Path, env: Env, *args: str) -> None:
        self.kb = kb
        self.proc = subprocess.Popen([*kb_mcp_command(), *args, "--kb-path", str(kb)],
                                     stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE, text=True,
                                     env={**os.environ, **env})
        assert self.proc.stderr is not None
        self.stderr = LineReader(self.proc.stderr)

    def wait_for_socket(self) -> Path:
        path = socket_of(self.kb)
        end = time.monotonic() + DEADLINE
        while not path.exists():
            assert self.proc.poll() is None, f"the server exited: {self.stderr.drain()}"
            assert time.monotonic() < end, "no socket within the deadline"
            time.sleep(0.05)
        return path

    def wait_exit(self) -> int:
        return self.proc.wait(timeout=DEADLINE)


@pytest.fixture
def servers() -> Iterator[list[Server]]:
    started: list[Server] = []
    yield started
    for server in started:
        stop(server.proc)
        server.stderr.drain()


def test_a_running_stdio_server_answers_with_the_local_output_and_removes_its_socket(
    fresh_kb: Path, server_env: Env, servers: list[Server]
) -> None:
    server = Server(fresh_kb, server_env, "serve", "--no-watch")
    servers.append(server)
    path = server.wait_for_socket()
    assert stat.S_IMODE(os.lstat(path).st_mode) == 0o600
    for args in (["rotate signing keys"],
                 ["rotate signing keys", "--format", "json", "--mode", "lexical", "-n", "3"],
                 ["backups", "--tag", "ops", "--format=json"],
                 ["garden tomatoes", "--mode", "lexical", "--chunks-per-document", "1"]):
        remote = kb_search(fresh_kb, server_env, *args, "-v")
        local = searched_here(fresh_kb, server_env, *args)
        assert remote.returncode == local.returncode == 0, remote.stderr + local.stderr
        assert answered_by(server.proc.pid) in remote.stderr, args
        assert remote.stdout == local.stdout, args
        assert remote.stdout.strip()
    assert server.proc.stdin is not None
    server.proc.stdin.close()  # the MCP way to end a stdio server
    assert server.wait_exit() == 0
    assert not path.exists()


def test_a_running_http_server_answers_and_removes_its_socket_on_sigterm(
    fresh_kb: Path, server_env: Env, servers: list[Server]
) -> None:
    server = Server(fresh_kb, server_env, "serve", "--transport", "http", "--port", "0",
                    "--no-watch")
    servers.append(server)
    path = server.wait_for_socket()
    remote = kb_search(fresh_kb, server_env, "vault", "--mode", "lexical", "--format", "json",
                       "-v")
    local = searched_here(fresh_kb, server_env, "vault", "--mode", "lexical", "--format", "json")
    assert answered_by(server.proc.pid) in remote.stderr
    assert remote.stdout == local.stdout and '"guides/keys.md"' in remote.stdout
    server.proc.send_signal(signal.SIGTERM)
    server.wait_exit()
    assert not path.exists()


def test_kb_mcp_watch_answers_too(
    fresh_kb: Path, server_env: Env, servers: list[Server]
) -> None:
    server = Server(fresh_kb, server_env, "watch")
    servers.append(server)
    path = server.wait_for_socket()
    remote = kb_search(fresh_kb, server_env, "staking tomatoes", "-v")
    local = searched_here(fresh_kb, server_env, "staking tomatoes")
    assert answered_by(server.proc.pid) in remote.stderr
    assert remote.stdout == local.stdout and "notes/garden.md" in remote.stdout
    server.proc.send_signal(signal.SIGTERM)
    assert server.wait_exit() == 0
    assert not path.exists()


def test_a_killed_servers_stale_socket_is_ignored_then_replaced(
    fresh_kb: Path, server_env: Env, servers: list[Server]
) -> None:
    server = Server(fresh_kb, server_env, "serve", "--no-watch")
    servers.append(server)
    path = server.wait_for_socket()
    server.proc.kill()
    server.wait_exit()
    assert stat.S_ISSOCK(os.lstat(path).st_mode)  # left behind

    stale = kb_search(fresh_kb, server_env, "vault", "--mode", "lexical", "-v")
    local = searched_here(fresh_kb, server_env, "vault", "--mode", "lexical")
    assert stale.returncode == 0, stale.stderr
    assert "stale socket" in stale.stderr and stale.stdout == local.stdout

    second = Server(fresh_kb, server_env, "serve", "--no-watch")
    servers.append(second)
    end = time.monotonic() + DEADLINE
    while answered_by(second.proc.pid) not in (
            kb_search(fresh_kb, server_env, "vault", "--mode", "lexical", "-v").stderr):
        assert second.proc.poll() is None and time.monotonic() < end
        time.sleep(0.1)


def test_another_configuration_or_no_server_searches_locally(
    fresh_kb: Path, server_env: Env, servers: list[Server], tmp_path: Path
) -> None:
    server = Server(fresh_kb, server_env, "serve", "--no-watch")
    servers.append(server)
    server.wait_for_socket()
    config = tmp_path / "other.toml"
    config.write_text("[search]\ndefault_limit = 1\n", encoding="utf-8")
    other = kb_search(fresh_kb, server_env, "keys", "--mode", "lexical", "--config",
                      str(config), "-v")
    assert "declined: another configuration" in other.stderr
    assert other.stdout.count("\n1. ") + other.stdout.startswith("1. ") == 1
    assert "\n2. " not in other.stdout

    forced = kb_search(fresh_kb, {**server_env, "KB_MCP_NO_SERVER": "1"}, "keys", "--mode",
                       "lexical", "-v")
    assert "searched in this process (--no-server)" in forced.stderr


def test_a_lexical_search_without_a_server_loads_neither_lancedb_nor_the_model_nor_alembic(
    indexed_kb: Path, server_env: Env, tmp_path: Path
) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text(
        "import sys\nfrom kbmcp_cli.main import main\n"
        f"sys.argv = ['kb-mcp', 'search', '--kb-path', {str(indexed_kb)!r}, 'vault', "
        "'--mode', 'lexical', '--no-server']\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\nfinally:\n"
        "    heavy = [m for m in ('lancedb', 'pyarrow', 'fastembed', 'onnxruntime', "
        "'tokenizers', 'alembic', 'mako') if m in sys.modules]\n"
        "    print('heavy:', heavy, file=sys.stderr)\n")
    done = subprocess.run([sys.executable, str(probe)], env={**os.environ, **server_env},
                          capture_output=True, text=True, timeout=DEADLINE, check=False)
    assert "guides/keys.md" in done.stdout, done.stderr
    assert "heavy: []" in done.stderr


def test_a_server_of_several_collections_answers_their_searches(
    tmp_path: Path, server_env: Env, servers: list[Server]
) -> None:
    """One socket for the host's collections (decision 0051): `kb-mcp search` over the
    default collections, or the one it names, is answered by the running server with what
    a search in its own process prints."""
    from kbmcp_adapters.app.config import build_settings
    from tests.conftest import write_files

    for name, topic in (("alpha", "signing keys rotation vault"),
                        ("beta", "tomato garden vault staking")):
        write_files(tmp_path / name, {f"{name}.md": f"# {topic.title()}\n\n{topic}\n"})
    config = tmp_path / "kb-mcp.toml"
    config.write_text("".join(f'[[collections]]\nname = "{n}"\npath = "{n}"\n\n'
                              for n in ("alpha", "beta")), encoding="utf-8")
    env = {**os.environ, **server_env}
    indexed = kb_mcp_here(["index", "--config", str(config)], env)  # set-up: in this process
    assert indexed.returncode == 0, indexed.stderr
    proc = subprocess.Popen([*kb_mcp_command(), "serve", "--config", str(config),
                             "--no-watch"], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True, env=env)
    server = Server.__new__(Server)
    server.kb, server.proc = tmp_path, proc
    assert proc.stderr is not None
    server.stderr = LineReader(proc.stderr)
    servers.append(server)
    path = build_settings(config, user_config=False, env={}).index_dir / SOCKET_NAME
    end = time.monotonic() + DEADLINE
    while not path.exists():
        assert proc.poll() is None, f"the server exited: {server.stderr.drain()}"
        assert time.monotonic() < end, "no socket within the deadline"
        time.sleep(0.05)

    def search(*args: str) -> subprocess.CompletedProcess[str]:
        command = ["search", "--config", str(config), *args]
        if "--no-server" in args:  # what the server's answer must equal: in this process
            return kb_mcp_here(command, env)
        return subprocess.run([*kb_mcp_command(), *command], env=env, capture_output=True,
                              text=True, timeout=DEADLINE, check=False)

    for args in (["vault", "--mode", "lexical"], ["vault", "--mode", "lexical", "--format",
                                                  "json"],
                 ["vault", "--mode", "lexical", "--collection", "beta"]):
        remote, local = search(*args, "-v"), search(*args, "--no-server")
        assert remote.returncode == local.returncode == 0, remote.stderr + local.stderr
        assert answered_by(proc.pid) in remote.stderr, (args, remote.stderr)
        assert remote.stdout == local.stdout, args
    assert "alpha:" in search("vault", "--mode", "lexical").stdout
    assert "alpha" not in search("vault", "--mode", "lexical", "--collection", "beta").stdout

    # the route before click answers too (decision 0051, third addendum): never imported
    probe = tmp_path / "probe.py"
    probe.write_text(
        "import sys\nfrom kbmcp_cli.main import main\n"
        "sys.argv = ['kb-mcp', 'search', *sys.argv[1:]]\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\nfinally:\n"
        "    print('click imported:', 'click' in sys.modules, file=sys.stderr)\n")
    for args in (["vault", "--mode", "lexical"], ["vault", "--mode", "lexical", "--collection",
                                                  "beta", "--format", "json"]):
        fast = subprocess.run([sys.executable, str(probe), "--config", str(config), *args],
                              env=env, capture_output=True, text=True, timeout=DEADLINE,
                              check=False)
        assert "click imported: False" in fast.stderr, (args, fast.stderr)
        assert fast.stdout == search(*args, "--no-server").stdout, args
