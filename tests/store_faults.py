"""Fault builders for the store tests: damaged vector files, a damaged index database,
and the real `kb-mcp` command run as a user would (``kb_mcp``: a process) or in this
process (``kb_mcp_here``: click's runner, for a test whose point is what the command says
and does rather than the process, which costs two seconds of start-up each)."""

from __future__ import annotations

import logging
import random
import sqlite3
import subprocess
import sys
import traceback
from pathlib import Path

KB_MCP = [sys.executable, "-m", "kbmcp_cli"]

PAGES = {
    "keys.md": "# Rotating keys\n\nRotate the signing keys every 90 days with the vault "
    "CLI.\n\n## Rollback\n\nKeep the previous key for a week so old tokens verify.\n",
    "garden.md": "# Garden\n\nTomatoes need staking in June; basil likes the south bed.\n\n"
    "## Pests\n\nAphids leave when ladybirds arrive in the greenhouse.\n",
    "notes/backup.md": "# Backups\n\nThe database is dumped nightly at two and copied to "
    "cold storage.\n",
}


def kb_mcp(args: list[str], env: dict[str, str], timeout: float = 300,
           prefix: tuple[str, ...] = ()) -> subprocess.CompletedProcess[str]:
    """The real command, as a user runs it (``prefix`` runs it as another user)."""
    return subprocess.run([*prefix, *KB_MCP, *args], env=env, capture_output=True, text=True,
                          timeout=timeout, stdin=subprocess.DEVNULL, check=False)


def kb_mcp_here(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """The command in this process with ``env`` in ``os.environ`` meanwhile, as a finished
    process: its exit code, stdout and stderr (an uncaught exception's traceback included,
    as the process would print it). The root logger the command points at its stderr is
    given back afterwards."""
    from click.testing import CliRunner

    from kbmcp_cli.commands import cli

    root = logging.getLogger()
    level, handlers = root.level, root.handlers[:]
    try:
        result = CliRunner().invoke(cli, args, env=env, prog_name="kb-mcp")
    finally:
        root.setLevel(level)
        root.handlers[:] = handlers
    stderr = result.stderr
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        stderr += "".join(traceback.format_exception(result.exception))
    return subprocess.CompletedProcess(["kb-mcp", *args], result.exit_code, result.stdout,
                                       stderr)


def manifests(vectors_dir: Path) -> list[Path]:
    found = sorted(vectors_dir.glob("*.lance/_versions/*.manifest"))
    assert found, f"no LanceDB manifest under {vectors_dir}"
    return found


def damage_manifests(vectors_dir: Path, how: str) -> None:
    """Garbage in every manifest of the vector table.

    ``length``: the length prefix at the head of the file says it is longer than it is
    (LanceDB 0.40 panics: "rust future panicked"); ``garbage``: the whole file replaced by
    random bytes of the same size (an I/O error).
    """
    rng = random.Random(7)
    for path in manifests(vectors_dir):
        data = path.read_bytes()
        if how == "length":
            path.write_bytes((len(data) + 200).to_bytes(4, "little") + data[4:])
        else:
            path.write_bytes(rng.randbytes(len(data)))


def damage_store(db: Path, seed: int = 5, size: int = 8192) -> int:
    """``size`` random bytes written over the in-use pages nearest the middle of ``db``
    (past the header page; a free page would hide the damage). Returns the offset."""
    with sqlite3.connect(db) as conn:
        page_size = conn.execute("PRAGMA page_size").fetchone()[0]
        pages = [p for (p,) in conn.execute(
            "SELECT pageno FROM dbstat WHERE pagetype IN ('internal', 'leaf') AND pageno > 1")]
    conn.close()
    middle = db.stat().st_size // page_size // 2
    page = min(pages, key=lambda p: abs(p - middle))
    offset = (page - 1) * page_size
    with db.open("r+b") as f:
        f.seek(offset)
        f.write(random.Random(seed).randbytes(size))
    return offset


def damage_tables(db: Path, tables: set[str], seed: int = 5) -> int:
    """Random bytes over every in-use page of ``tables`` (their b-trees, indexes left
    whole): a read of any of their rows meets the damage, whatever pages the schema's
    other tables put in the middle of the file. Returns how many pages were damaged."""
    with sqlite3.connect(db) as conn:
        page_size = conn.execute("PRAGMA page_size").fetchone()[0]
        pages = [p for (p, name) in conn.execute(
            "SELECT pageno, name FROM dbstat WHERE pagetype IN ('internal', 'leaf') "
            "AND pageno > 1") if name in tables]
    conn.close()
    noise = random.Random(seed)
    with db.open("r+b") as f:
        for page in pages:
            f.seek((page - 1) * page_size)
            f.write(noise.randbytes(page_size))
    return len(pages)


def no_traceback(stderr: str) -> None:
    assert "Traceback" not in stderr, stderr
    assert "RustPanic" not in stderr and "PanicException" not in stderr, stderr
