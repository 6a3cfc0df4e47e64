"""The index database as kb-mcp left it after a check that found nothing (decision 0058).

``PRAGMA quick_check`` reads every page: about 0.2 s per 150 MB, 35 % of an incremental
run's time in a 5 GB index. A whole-folder run needs it only when something other than
kb-mcp may have written the file since the last check found nothing. So after a run that
started from such a file (checked and nothing found, or unchanged since), the run's writes
are checkpointed into the file and its stamp is kept (``index.db-checked`` in the index's
state folder, ``app/index_state.py``): device, inode, size, and the modification and
change times in nanoseconds, and whether its write-ahead log is empty. The next run
compares: the same stamp means no other writer touched the file or its log (a write moves
the change time, which no tool sets back), so the check is skipped; any difference, or no
stamp, and the whole check runs as before. A check that runs out of its time (a file of
several GB) lets the run go on, as before, and the stamp is kept then too: checking the
same unchanged bytes again would find nothing more.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from pathlib import Path

__all__ = ["forget", "record", "unchanged"]


def _stamp(db: Path) -> str | None:
    """The database file's stamp and its write-ahead log's: a log that is missing or
    empty (every write folded in) is "empty", whichever; one holding frames is stamped."""
    try:
        st = os.stat(db)
    except OSError:
        return None
    try:
        log = os.stat(db.with_name(db.name + "-wal"))
        wal = "empty" if log.st_size == 0 else _of(log)
    except FileNotFoundError:
        wal = "empty"
    except OSError:
        return None
    return f"{_of(st)} wal {wal}"


def _of(st: os.stat_result) -> str:
    return f"{st.st_dev}:{st.st_ino}:{st.st_size}:{st.st_mtime_ns}:{st.st_ctime_ns}"


def unchanged(db: Path, kept_in: Path) -> bool:
    """Whether ``db`` is the file the last checked run left (its stamp, kept in the file
    ``kept_in``, is the same)."""
    now = _stamp(db)
    try:
        kept = kept_in.read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):
        return False
    return now is not None and kept == now


def record(db: Path, kept_in: Path) -> None:
    """Fold the write-ahead log into ``db`` (the writer lock is held: no other writer) and
    keep the file's stamp; a checkpoint that cannot finish (a reader holds an old
    snapshot) keeps no stamp, so the next run checks the whole file."""
    try:  # the file as it is: never created here
        conn = sqlite3.connect(f"{db.absolute().as_uri()}?mode=rw", uri=True, timeout=0)
        try:
            busy = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        finally:
            conn.close()
    except sqlite3.Error:
        forget(kept_in)
        return
    stamp = _stamp(db)
    if busy is None or busy[0] != 0 or stamp is None:
        forget(kept_in)
        return
    part = kept_in.with_name(kept_in.name + ".part")
    try:
        kept_in.parent.mkdir(parents=True, exist_ok=True)
        part.write_text(stamp + "\n", encoding="ascii")
        os.replace(part, kept_in)
    except OSError:
        forget(kept_in)


def forget(kept_in: Path) -> None:
    """No stamp: the next whole-folder run checks every page."""
    with contextlib.suppress(OSError):
        kept_in.unlink()
