"""A read-only index, as a user without write rights sees it: readers work, writers stop
with one sentence.

Permissions do not bind root, and CI runs as root: there every command runs under
``setpriv`` with all capabilities dropped, so the file modes apply to it as to anyone
(the interpreter may live where another uid cannot reach it, e.g. under /root). The
test checks first that the drop really bites.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import write_files
from tests.e2e.conftest import LineReader, RawStdio, kb_mcp_command, stop
from tests.store_faults import PAGES, kb_mcp, no_traceback

#: Runs a command with no capabilities: root then obeys file modes like any user.
DROP_PRIVILEGES = ("setpriv", "--bounding-set=-all", "--inh-caps=-all")


def unprivileged() -> tuple[str, ...]:
    if os.geteuid() != 0:
        return ()
    if shutil.which("setpriv") is None:
        pytest.skip("running as root without setpriv: permissions cannot be made to bind")
    return DROP_PRIVILEGES


def make_read_only(root: Path) -> None:
    """0555 folders, 0444 files, from the leaves up."""
    for folder, dirs, files in os.walk(root, topdown=False):
        for name in files:
            os.chmod(os.path.join(folder, name), 0o444)
        for name in dirs:
            os.chmod(os.path.join(folder, name), 0o555)
    os.chmod(root, 0o555)


def make_writable(root: Path) -> None:
    os.chmod(root, 0o755)
    for folder, dirs, files in os.walk(root):
        for name in dirs:
            os.chmod(os.path.join(folder, name), 0o755)
        for name in files:
            os.chmod(os.path.join(folder, name), 0o644)


@pytest.fixture(scope="module")
def env(model_cache: Path) -> dict[str, str]:
    return {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONUNBUFFERED": "1",
            "XDG_CACHE_HOME": str(model_cache.parent / "xdg")}


@pytest.fixture(scope="module")
def indexed(tmp_path_factory: pytest.TempPathFactory, env: dict[str, str]) -> Path:
    kb = tmp_path_factory.mktemp("ro") / "kb"
    write_files(kb, dict(PAGES))
    done = kb_mcp(["index", "--kb-path", str(kb), "-q"], env)
    assert done.returncode == 0, done.stderr
    return kb


@pytest.fixture
def read_only_kb(indexed: Path, tmp_path: Path) -> Iterator[Path]:
    """A copy of the indexed knowledge base whose index folder nobody may write."""
    kb = tmp_path / "kb"
    shutil.copytree(indexed, kb)
    make_read_only(kb / ".kb-mcp")
    prefix = unprivileged()
    probe = subprocess.run([*prefix, "touch", str(kb / ".kb-mcp" / "probe")],
                           capture_output=True, check=False)
    assert probe.returncode != 0, "the index folder is still writable: the test would prove nothing"
    yield kb
    make_writable(kb / ".kb-mcp")


def run(args: list[str], kb: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return kb_mcp([*args, "--kb-path", str(kb)], env, prefix=unprivileged())


def test_status_search_and_doctor_work_on_a_read_only_index(
    read_only_kb: Path, env: dict[str, str]
) -> None:
    status = run(["status", "--format", "json"], read_only_kb, env)
    assert status.returncode == 0, status.stderr
    assert json.loads(status.stdout)["documents"] == len(PAGES)
    assert json.loads(status.stdout)["read_only"] is True

    found = run(["search", "vault signing keys", "--format", "json"], read_only_kb, env)
    assert found.returncode == 0, found.stderr
    body = json.loads(found.stdout)
    assert body["results"][0]["path"] == "keys.md"
    assert "notice" not in body  # both legs answered: SQLite and LanceDB read-only

    doctor = run(["doctor", "--format", "json"], read_only_kb, env)
    assert doctor.returncode == 0, doctor.stdout + doctor.stderr
    assert json.loads(doctor.stdout)["findings"] == []
    for done in (status, found, doctor):
        no_traceback(done.stderr)
        assert "readonly" not in done.stderr
    assert sorted(p.name for p in (read_only_kb / ".kb-mcp").iterdir()) == [
        "index.db", "vectors", "writer.lock"]


def test_a_reader_sees_the_owner_s_latest_commit_while_the_owner_writes(
    read_only_kb: Path, env: dict[str, str]
) -> None:
    """The owner's writer holds the WAL open with a commit not yet checkpointed: a
    read-only reader must see it (``mode=ro`` through the WAL, not a frozen file)."""
    index_dir = read_only_kb / ".kb-mcp"
    make_writable(index_dir)
    owner = sqlite3.connect(index_dir / "index.db", isolation_level=None)
    try:
        owner.execute("PRAGMA journal_mode=WAL")
        owner.execute("PRAGMA wal_autocheckpoint=0")
        owner.execute("INSERT INTO documents (path, title, content_hash, tags, metadata, "
                      "last_indexed) VALUES ('late.md', 'Late', 'x', '[]', '{}', 'now')")
        assert (index_dir / "index.db-wal").stat().st_size > 0
        make_read_only(index_dir)
        status = run(["status", "--format", "json"], read_only_kb, env)
        assert status.returncode == 0, status.stderr
        assert json.loads(status.stdout)["documents"] == len(PAGES) + 1
    finally:
        owner.close()


READER = """
import sys
from kbmcp_adapters.store.sql_store import SqlIndexStore
store = SqlIndexStore(sys.argv[1], create=False)
assert store.read_only
for line in sys.stdin:
    print(store.stats().documents, flush=True)
"""


def test_a_long_lived_reader_sees_commits_made_after_it_opened(
    read_only_kb: Path, tmp_path: Path, env: dict[str, str]
) -> None:
    """Opened while nobody writes (no WAL files: the file is read as it is), a reader
    such as `kb-mcp serve` still sees what the owner commits later."""
    index_dir = read_only_kb / ".kb-mcp"
    script = tmp_path / "reader.py"
    script.write_text(READER)
    reader = subprocess.Popen(
        [*unprivileged(), sys.executable, str(script), f"sqlite:///{index_dir / 'index.db'}"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env=env)
    assert reader.stdin is not None and reader.stdout is not None
    owner: sqlite3.Connection | None = None
    try:
        reader.stdin.write("count\n")
        reader.stdin.flush()
        assert reader.stdout.readline().strip() == str(len(PAGES))
        assert not (index_dir / "index.db-shm").exists()
        owner = sqlite3.connect(index_dir / "index.db", isolation_level=None)
        owner.execute("PRAGMA wal_autocheckpoint=0")
        owner.execute("INSERT INTO documents (path, title, content_hash, tags, metadata, "
                      "last_indexed) VALUES ('late.md', 'Late', 'x', '[]', '{}', 'now')")
        for name in ("index.db-wal", "index.db-shm"):
            os.chmod(index_dir / name, 0o444)  # the owner's files, not the reader's
        reader.stdin.write("count\n")
        reader.stdin.flush()
        assert reader.stdout.readline().strip() == str(len(PAGES) + 1)
    finally:
        if owner is not None:
            owner.close()
        _, errors = reader.communicate(timeout=60)  # EOF on stdin ends the reader
    assert reader.returncode == 0, errors


def test_index_on_a_read_only_index_fails_in_one_sentence(
    read_only_kb: Path, env: dict[str, str]
) -> None:
    for args in (["index"], ["index", "--force"]):
        done = run(args, read_only_kb, env)
        assert done.returncode == 2, done.stderr
        no_traceback(done.stderr)
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1, lines
        assert "cannot write the index" in lines[0] and "search" in lines[0], lines


def test_a_read_only_knowledge_base_folder_without_an_index(
    tmp_path: Path, env: dict[str, str]
) -> None:
    kb = tmp_path / "kb"
    write_files(kb, dict(PAGES))
    os.chmod(kb / "notes", 0o555)
    os.chmod(kb, 0o555)
    try:
        done = run(["index"], kb, env)
        assert done.returncode == 2, done.stderr
        no_traceback(done.stderr)
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and "cannot write the index" in lines[0], lines
        assert "index_dir" in lines[0]
        for args in (["status"], ["search", "keys"], ["doctor"]):
            reader = run(args, kb, env)
            assert reader.returncode == 2, reader.stderr
            no_traceback(reader.stderr)
            assert "no index" in reader.stderr
        assert not (kb / ".kb-mcp").exists()
    finally:
        os.chmod(kb, 0o755)
        os.chmod(kb / "notes", 0o755)


def test_the_mcp_server_searches_a_read_only_index_and_refuses_rebuild_index(
    read_only_kb: Path, env: dict[str, str], raw_stdio: list[RawStdio],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("KB_MCP_E2E_COMMAND", " ".join([*unprivileged(), *kb_mcp_command()]))
    server = RawStdio(read_only_kb, env)
    raw_stdio.append(server)
    server.initialize()
    reply = server.send("tools/call", {"name": "search", "arguments": {"query": "vault keys"}})
    assert reply is not None and reply["result"]["isError"] is False, reply
    assert reply["result"]["structuredContent"]["results"][0]["path"] == "keys.md"
    reply = server.send("tools/call", {"name": "rebuild_index", "arguments": {}})
    assert reply is not None and reply["result"]["isError"] is True, reply
    error = json.loads(reply["result"]["content"][0]["text"])["error"]
    assert error["code"] == "index_read_only" and "cannot write the index" in error["message"]
    assert str(read_only_kb) not in error["message"]  # a client never sees a server path
    _, stderr, code = server.close()
    assert code == 0
    no_traceback(stderr)


def test_live_sync_on_a_read_only_index_pauses_with_one_warning(
    read_only_kb: Path, env: dict[str, str]
) -> None:
    proc = subprocess.Popen(
        [*unprivileged(), *kb_mcp_command(), "serve", "--kb-path", str(read_only_kb)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env=env)
    assert proc.stdout is not None and proc.stderr is not None
    out, err = LineReader(proc.stdout), LineReader(proc.stderr)
    try:
        err.wait_for(r"live sync paused: cannot write the index")
    finally:
        stop(proc)
    stderr = err.drain()
    out.drain()
    no_traceback(stderr)
    assert "live sync failed" not in stderr


# -- `serve --read-only` on an index folder it could write ------------------------------------
def tree(folder: Path) -> dict[str, tuple[int, int, int]]:
    """(type and mode, size, mtime) of the folder and of everything under it: a file
    created and removed again (a socket, SQLite's -wal/-shm) still changes its folder."""
    entries = {".": folder, **{str(p.relative_to(folder)): p for p in folder.rglob("*")}}
    stats = {name: path.lstat() for name, path in entries.items()}
    return {name: (st.st_mode, st.st_size, st.st_mtime_ns) for name, st in stats.items()}


class Replica:
    """`kb-mcp serve --read-only` over stdio (watching left on: read-only alone turns it
    off), spoken to with raw JSON-RPC lines."""

    def __init__(self, kb: Path, env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(
            [*kb_mcp_command(), "serve", "--kb-path", str(kb), "--read-only"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True, encoding="utf-8", env=env)
        assert self.proc.stdout is not None and self.proc.stderr is not None
        self.stdout, self.stderr = LineReader(self.proc.stdout), LineReader(self.proc.stderr)
        self.next_id = 0
        hello = self.call("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                         "clientInfo": {"name": "replica", "version": "1"}})
        assert "result" in hello, hello
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def send(self, message: dict[str, object]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(message) + "\n")
        self.proc.stdin.flush()

    def call(self, method: str, params: dict[str, object]) -> dict[str, object]:
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        while True:
            line = self.stdout.next_line()
            assert line is not None, self.stderr.lines[-20:]
            reply = json.loads(line)
            if reply.get("id") == self.next_id:
                return dict(reply)

    def tool(self, name: str, arguments: dict[str, object]) -> dict[str, object]:
        result = self.call("tools/call", {"name": name, "arguments": arguments})["result"]
        assert isinstance(result, dict) and result["isError"] is False, result
        return dict(result["structuredContent"])

    def found(self, query: str) -> list[str]:
        hits = self.tool("search", {"query": query, "limit": 10})["results"]
        assert isinstance(hits, list)
        return [hit["path"] for hit in hits]

    def close(self) -> tuple[int, str]:
        """Close stdin; the exit code and the log."""
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        code = self.proc.wait(timeout=60)
        return code, self.stderr.drain()


@pytest.fixture
def writable_kb(indexed: Path, tmp_path: Path) -> Path:
    kb = tmp_path / "kb"
    shutil.copytree(indexed, kb)
    return kb


def test_a_read_only_server_creates_and_changes_nothing_in_the_index_folder(
    writable_kb: Path, env: dict[str, str]
) -> None:
    """The folder is writable, yet `serve --read-only` answers searches and reads without
    a socket, a -wal/-shm file or any other change there, while it runs and after."""
    index_dir = writable_kb / ".kb-mcp"
    before = tree(index_dir)
    assert not {"index.db-wal", "index.db-shm", "kb-mcp.sock"} & set(before)
    replica = Replica(writable_kb, env)
    try:
        assert replica.found("vault signing keys")[0] == "keys.md"  # both legs, the model
        assert replica.found("tomatoes staking")[0] == "garden.md"
        document = replica.tool("get_document", {"path": "notes/backup.md"})
        assert "cold storage" in json.dumps(document)
        read = replica.call("resources/read", {"uri": "kb://doc/keys.md"})
        assert "vault" in json.dumps(read["result"])
        assert replica.tool("list_topics", {})["watcher"] == {"alive": False}
        assert tree(index_dir) == before  # nothing while it runs either
    finally:
        code, log = replica.close()
    assert code == 0, log
    no_traceback(log)
    assert tree(index_dir) == before


def test_a_read_only_server_sees_what_a_live_writer_commits(
    writable_kb: Path, env: dict[str, str]
) -> None:
    """Started before any writer (the file read as it is), the replica sees the commits of
    a `kb-mcp watch` started later (read through its WAL), and after that writer stopped."""
    replica = Replica(writable_kb, env)
    watch: subprocess.Popen[str] | None = None
    try:
        assert "zeppelin.md" not in replica.found("zeppelin hangar")
        watch = subprocess.Popen([*kb_mcp_command(), "watch", "--kb-path", str(writable_kb)],
                                 stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                 stderr=subprocess.PIPE, text=True, env=env)
        assert watch.stderr is not None
        watched = LineReader(watch.stderr)
        watched.wait_for(r"watching .* for changes")
        write_files(writable_kb, {"zeppelin.md": "# Zeppelin\n\nThe zeppelin hangar opens "
                                                 "at dawn.\n"})
        watched.wait_for(r"1 added")
        assert (writable_kb / ".kb-mcp" / "index.db-shm").exists()  # the writer is live
        assert "zeppelin.md" in replica.found("zeppelin hangar")
        watch.send_signal(signal.SIGTERM)
        assert watch.wait(timeout=60) == 0, watched.drain()
        assert not (writable_kb / ".kb-mcp" / "index.db-shm").exists()
        assert "zeppelin.md" in replica.found("zeppelin hangar")  # the file as it is now
    finally:
        if watch is not None:
            stop(watch)
        code, log = replica.close()
    assert code == 0, log
    no_traceback(log)


def test_a_read_only_http_replica_creates_and_changes_nothing_in_the_index_folder(
    writable_kb: Path, env: dict[str, str]
) -> None:
    from tests.e2e.http_support import environment, initialize_params, start

    index_dir = writable_kb / ".kb-mcp"
    before = tree(index_dir)
    served = start(writable_kb, environment(env), "--read-only")
    try:
        assert served.rpc("initialize", initialize_params()) is not None
        found = served.rpc("tools/call", {"name": "search",
                                          "arguments": {"query": "vault signing keys"}})
        assert found is not None
        assert found["result"]["structuredContent"]["results"][0]["path"] == "keys.md"
        assert tree(index_dir) == before
        served.proc.send_signal(signal.SIGTERM)
        assert served.proc.wait(timeout=60) == 0
    finally:
        stop(served.proc)
    no_traceback(served.log.drain())
    assert tree(index_dir) == before
