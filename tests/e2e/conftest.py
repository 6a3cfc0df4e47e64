"""End-to-end fixtures: a real indexed knowledge base and the real `kb-mcp` process."""

from __future__ import annotations

import contextlib
import json
import os
import queue
import re
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import IO, Any

import mcp_types as types
import pytest
from mcp import Client
from mcp.client.session import MessageHandlerFnT
from mcp.client.stdio import StdioServerParameters, stdio_client

#: Extra environment variables for the `kb-mcp` processes the tests start.
Env = dict[str, str]

#: Every wait in these tests ends by this many seconds (the first model load included).
DEADLINE = 120.0


def kb_mcp_command() -> list[str]:
    """The installed console script next to this interpreter (or $KB_MCP_E2E_COMMAND)."""
    override = os.environ.get("KB_MCP_E2E_COMMAND")
    if override:
        return override.split()
    return [str(Path(sys.executable).with_name("kb-mcp"))]


def write(root: Path, rel: str, text: str) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


FILLER = (
    "The archive keeps quarterly reports on inventory, shipping lanes, warehouse "
    "staffing and supplier reviews. Each section lists the figures and the people who "
    "signed them off."
)


def make_corpus(root: Path) -> Path:
    """A small knowledge base in three topic groups, plus filler so a forced rebuild takes
    a measurable moment. A secret file sits next to (outside) the root."""
    kb = root / "kb"
    write(
        kb,
        "guides/keys.md",
        "---\ntitle: Rotating signing keys\ntags: [ops, security]\n"
        "date: 2026-02-10\n---\n# Rotating keys\n\nRotate the signing keys every 90 days "
        "with the vault CLI: `vault rotate signing`.\n\n## Rollback\n\nKeep the previous "
        "key for one week so old tokens still verify.\n",
    )
    write(
        kb,
        "guides/backup.md",
        "---\ntitle: Nightly backups\ntags: [ops]\ndate: 2025-11-02"
        "\n---\n# Backups\n\nThe database is dumped at 02:00 and copied to cold storage.\n",
    )
    write(
        kb,
        "notes/garden.md",
        "# Garden\n\nTomatoes need staking in June; basil likes the south bed.\n",
    )
    write(kb, "readme.md", "# About\n\nThis is the team handbook.\n")
    for i in range(40):
        write(
            kb,
            f"archive/q{i:02d}.md",
            f"# Quarter {i}\n\n{FILLER} Report number {i}.\n\n"
            f"## Details {i}\n\n{FILLER} Appendix {i}.\n",
        )
    write(root, "secret.md", "# Secret\n\nthe launch codes\n")
    return kb


@pytest.fixture(scope="session")
def server_env(model_cache: Path) -> Env:
    """Extra environment for every `kb-mcp` the tests start: offline, the session's cache."""
    return {
        "HF_HUB_OFFLINE": "1",
        "XDG_CACHE_HOME": str(model_cache.parent / "xdg"),
        "PYTHONUNBUFFERED": "1",
    }


def run_index(kb: Path, env: Env) -> None:
    """``kb-mcp index --quiet`` on ``kb``, in this process: an index built for a test to
    serve is set-up, not what the test crosses a process boundary for (a process would
    cost two seconds of start-up each time)."""
    from tests.store_faults import kb_mcp_here

    done = kb_mcp_here(["index", "--kb-path", str(kb), "--quiet"], {**os.environ, **env})
    assert done.returncode == 0, done.stderr


def built_once(tmp_path_factory: pytest.TempPathFactory, name: str,
               build: Callable[[Path], Path]) -> Path:
    """``build(folder)`` (it returns the knowledge base it made inside ``folder``), run once
    per test run. Under ``pytest -n`` the first worker to ask builds it in the run's shared
    temp folder, under a file lock, and every worker gets its own copy: servers that one
    worker starts on its copy never meet another worker's (sockets, locks, live sync)."""
    mine = tmp_path_factory.mktemp(name)
    if os.environ.get("PYTEST_XDIST_WORKER") is None:
        return build(mine)
    from filelock import FileLock

    shared = tmp_path_factory.getbasetemp().parent / f"built-{name}"
    stamp = shared.with_name(f"{shared.name}.built")
    with FileLock(f"{shared}.lock", timeout=DEADLINE * 3):
        if not stamp.exists():
            shutil.rmtree(shared, ignore_errors=True)
            shared.mkdir()
            stamp.write_text(build(shared).relative_to(shared).as_posix(), encoding="utf-8")
    shutil.copytree(shared, mine, symlinks=True, dirs_exist_ok=True)
    return mine / stamp.read_text(encoding="utf-8")


@pytest.fixture(scope="session")
def indexed_kb(tmp_path_factory: pytest.TempPathFactory, server_env: Env) -> Path:
    """One indexed knowledge base for the whole session (indexing embeds with the real model):
    tests only read it, through servers they stop; a test that changes it takes ``fresh_kb``."""

    def build(folder: Path) -> Path:
        kb = make_corpus(folder)
        run_index(kb, server_env)
        return kb

    return built_once(tmp_path_factory, "e2e", build)


@pytest.fixture()
def fresh_kb(indexed_kb: Path, tmp_path: Path) -> Path:
    """A private copy of the indexed knowledge base, for tests that change it (without the
    local search socket of a server running on the original meanwhile)."""
    kb = tmp_path / "kb"
    shutil.copytree(indexed_kb, kb, ignore=shutil.ignore_patterns("kb-mcp.sock"))
    shutil.copy(indexed_kb.parent / "secret.md", tmp_path / "secret.md")
    return kb


class LineReader:
    """Collects a pipe's lines on a thread so tests can wait for one with a deadline."""

    def __init__(self, stream: IO[str]) -> None:
        self.lines: list[str] = []
        self._queue: queue.Queue[str | None] = queue.Queue()
        self._thread = threading.Thread(target=self._pump, args=(stream,), daemon=True)
        self._thread.start()

    def _pump(self, stream: IO[str]) -> None:
        try:
            for line in stream:
                self._queue.put(line)
        finally:
            stream.close()
            self._queue.put(None)

    def next_line(self, timeout: float = DEADLINE) -> str | None:
        """The next line, or None at end of stream."""
        line = self._queue.get(timeout=timeout)
        if line is not None:
            self.lines.append(line)
        return line

    def wait_for(self, pattern: str, timeout: float = DEADLINE) -> re.Match[str]:
        end = time.monotonic() + timeout
        for seen in list(self.lines):
            if found := re.search(pattern, seen):
                return found
        while (left := end - time.monotonic()) > 0:
            line = self.next_line(left)
            if line is None:
                break
            if found := re.search(pattern, line):
                return found
        raise AssertionError(f"no line matching {pattern!r}; got: {''.join(self.lines)[-2000:]}")

    def drain(self) -> str:
        """Everything up to end of stream (call once the process has exited)."""
        while self.next_line() is not None:
            pass
        self._thread.join(timeout=DEADLINE)
        return "".join(self.lines)


def stop(proc: subprocess.Popen[Any]) -> None:
    """Stop a server we started: terminate, then kill after a bounded wait.

    Its stdout/stderr are closed by their LineReader at end of stream.
    """
    if proc.stdin is not None and not proc.stdin.closed:
        proc.stdin.close()
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=15)


class RawStdio:
    """`kb-mcp serve` over raw pipes: one JSON-RPC line in, every stdout line checked.
    ``args``: more options of `serve` (--no-index, --read-only...)."""

    def __init__(self, kb: Path, env: Env, *args: str) -> None:
        self.proc = subprocess.Popen(
            [*kb_mcp_command(), "serve", "--kb-path", str(kb), "--no-watch", *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            encoding="utf-8",
            env={**os.environ, **env},
        )
        assert self.proc.stdout is not None and self.proc.stderr is not None
        self.stdout = LineReader(self.proc.stdout)
        self.stderr = LineReader(self.proc.stderr)
        self._next_id = 0

    def send(
        self, method: str, params: dict[str, Any] | None = None, notify: bool = False
    ) -> dict[str, Any] | None:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        if not notify:
            self._next_id += 1
            message["id"] = self._next_id
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(message) + "\n")
        self.proc.stdin.flush()
        if notify:
            return None
        while True:
            line = self.stdout.next_line()
            assert line is not None, "the server closed stdout"
            reply = json.loads(line)  # every stdout line must be JSON-RPC
            assert reply.get("jsonrpc") == "2.0", line
            if reply.get("id") == self._next_id:
                return dict(reply)

    def initialize(self) -> dict[str, Any]:
        reply = self.send(
            "initialize",
            {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "e2e-raw", "version": "1"},
            },
        )
        assert reply is not None
        self.send("notifications/initialized", notify=True)
        return reply

    def close(self) -> tuple[str, str, int]:
        """Close stdin (the MCP way to stop a stdio server): all stdout, stderr, exit code."""
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            code = self.proc.wait(timeout=30)
        finally:
            stop(self.proc)
        return self.stdout.drain(), self.stderr.drain(), code


@pytest.fixture()
def raw_stdio() -> Iterator[list[RawStdio]]:
    started: list[RawStdio] = []
    yield started
    for server in started:
        stop(server.proc)


@contextlib.asynccontextmanager
async def stdio_session(
    kb: Path,
    log: Path,
    env: Env,
    *,
    mode: str = "legacy",
    message_handler: MessageHandlerFnT | None = None,
    extra_args: tuple[str, ...] = (),
    watch: bool = False,
) -> AsyncIterator[Client]:
    """The SDK's own client talking to a `kb-mcp serve` subprocess; its stderr goes to ``log``."""
    command = kb_mcp_command()
    params = StdioServerParameters(
        command=command[0],
        args=[*command[1:], "serve", "--kb-path", str(kb),
              *([] if watch else ["--no-watch"]), *extra_args],
        # the SDK passes on only a few variables: keep the test's own user config folder
        env={"XDG_CONFIG_HOME": os.environ["XDG_CONFIG_HOME"], **env},
    )
    with log.open("w", encoding="utf-8") as errlog:
        async with Client(
            stdio_client(params, errlog=errlog),
            mode=mode,
            message_handler=message_handler,
            read_timeout_seconds=DEADLINE,
        ) as client:
            yield client


def error_of(result: types.CallToolResult) -> dict[str, str]:
    """The ``{"code", "message"}`` of an isError tool result."""
    assert result.is_error, result
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    return dict(json.loads(block.text)["error"])


def text_of(result: types.CallToolResult) -> Any:
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    return json.loads(block.text)


# -- the web UI's corpus and server (tests/e2e/test_ui_*.py) ----------------------------------
@pytest.fixture(scope="session")
def ui_kb(tmp_path_factory: pytest.TempPathFactory, server_env: Env) -> Path:
    """The UI corpus, indexed with plain text enabled (once per session; tests only read it)."""
    from tests.e2e.ui_support import index_with_txt, make_ui_corpus

    def build(folder: Path) -> Path:
        kb = make_ui_corpus(folder)
        index_with_txt(kb, server_env)
        return kb

    return built_once(tmp_path_factory, "ui", build)


@pytest.fixture(scope="module")
def served(ui_kb: Path, server_env: Env) -> Iterator[Any]:
    """`kb-mcp serve --transport http` on the UI corpus, stopped after the module."""
    from tests.e2e.http_support import environment, start

    running = start(ui_kb, environment(server_env), "--no-watch")
    yield running
    stop(running.proc)
    running.log.drain()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Debian's Chromium through Playwright, one per module (never a downloaded browser)."""
    from tests.e2e.ui_support import CHROMIUM_ARGS, WAIT_MS, chromium_or_skip

    executable = chromium_or_skip()
    from playwright.sync_api import sync_playwright  # imported once Chromium is known

    with sync_playwright() as pw:
        launched = pw.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS,
                                      timeout=WAIT_MS)
        yield launched
        launched.close()


@pytest.fixture()
def page(browser: Any) -> Iterator[Any]:
    """A fresh page (its own context) of the module's browser, closed after the test."""
    from tests.e2e.ui_support import new_page

    opened = new_page(browser)
    yield opened
    opened.context.close()
