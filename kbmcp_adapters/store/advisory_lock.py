"""One writer per PostgreSQL index, across hosts: a session advisory lock on its own connection.

With a PostgreSQL store the writers may run on different machines, so the file lock in the
index folder cannot exclude them. The lock is then ``pg_try_advisory_lock(KEY)``, polled until
the writer's deadline, on one dedicated connection that stays open for the writer's whole run.
There is one key per index: a fixed 64-bit number derived from a constant name, so every
kb-mcp version agrees on it; a collection's index (its own schema of a shared database,
``pg_schema``) derives its key from that name and its schema, so writers of two
collections never wait on each other.

A writer that dies frees the lock with its connection, however it dies: a killed process's
socket is closed by its kernel at once. A writer whose *host* vanishes (power cut, network
gone) sends no close; TCP keepalives on both ends of the lock connection bound that case: the
server probes an idle lock connection after ``KEEPALIVE_IDLE_S`` seconds, then every
``KEEPALIVE_INTERVAL_S`` seconds, and drops it (freeing the lock) after ``KEEPALIVE_COUNT``
unanswered probes: about ``FREED_WITHIN_S`` = 60 s after the host went away, on servers whose
OS honours per-socket keepalive settings (Linux, macOS, Windows). The client sets the same
values, so a writer also learns within that bound that its own lock connection is gone.

The connection's ``application_name`` carries the holder's pid, host and start time, which a
waiting writer reads from ``pg_locks`` joined with ``pg_stat_activity`` (``application_name``
is visible to every role) to name the holder as the file lock does.
"""

from __future__ import annotations

import contextlib
import os
import socket
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any

from kbmcp_adapters.store.pg_schema import lock_key, lock_name
from kbmcp_core.errors import StoreError, StoreFailed, WriterBusy

__all__ = ["FREED_WITHIN_S", "LOCK_KEY", "advisory_lock", "is_postgresql_url", "store_lock_key"]

#: The lock's name; its key is the first 8 bytes of its SHA-256, as a signed 64-bit integer.
LOCK_NAME = "kb-mcp index writer"
LOCK_KEY = lock_key(LOCK_NAME)

KEEPALIVE_IDLE_S = 30
KEEPALIVE_INTERVAL_S = 10
KEEPALIVE_COUNT = 3
#: How long after the holder's host vanished the server frees its lock (s), at most.
FREED_WITHIN_S = KEEPALIVE_IDLE_S + KEEPALIVE_INTERVAL_S * KEEPALIVE_COUNT
#: How long connecting to the database may take (s) before the writer gives up.
CONNECT_TIMEOUT_S = 10
_POLL_S = 0.1
#: PostgreSQL keeps the first 63 bytes of ``application_name``.
_APP_NAME_MAX = 63
_APP_PREFIX = "kb-mcp writer"

_HOLDER_SQL = """
SELECT a.application_name
FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1
  AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
  AND l.classid::bigint = %s AND l.objid::bigint = %s
"""


def is_postgresql_url(url: str) -> bool:
    """True for a SQLAlchemy URL naming a PostgreSQL database (any driver)."""
    scheme = url.split(":", 1)[0].split("+", 1)[0].strip().lower()
    return scheme in ("postgresql", "postgres")


def _application_name(pid: int, since: str) -> str:
    """``kb-mcp writer pid=123 since=2026-01-02T03:04:05Z host=name``, the host cut to fit."""
    head = f"{_APP_PREFIX} pid={pid} since={since} host="
    host = socket.gethostname() or "?"
    return head + host[: max(1, _APP_NAME_MAX - len(head))]


def _describe(application_name: str | None) -> str:
    """The holder as the waiting writer's message names it."""
    if not application_name or not application_name.startswith(_APP_PREFIX):
        return "another process"
    fields = dict(part.split("=", 1) for part in application_name.split() if "=" in part)
    return (f"pid {fields.get('pid', '?')} on host {fields.get('host', '?')}, "
            f"writing since {fields.get('since', '?')}")


def _connect_args(url: str, application_name: str) -> dict[str, Any]:
    """libpq keywords for the lock connection: the URL's, plus keepalives and our name."""
    from sqlalchemy.engine import make_url

    parsed = make_url(url)
    args: dict[str, Any] = {}
    given: dict[str, str | int | None] = {
        "host": parsed.host, "port": parsed.port, "user": parsed.username,
        "password": parsed.password, "dbname": parsed.database}
    args.update({key: value for key, value in given.items() if value is not None})
    for key, option in parsed.query.items():
        args[key] = option[-1] if isinstance(option, tuple) else option
    server_side = (f"-c tcp_keepalives_idle={KEEPALIVE_IDLE_S} "
                   f"-c tcp_keepalives_interval={KEEPALIVE_INTERVAL_S} "
                   f"-c tcp_keepalives_count={KEEPALIVE_COUNT}")
    args["options"] = f"{args['options']} {server_side}" if args.get("options") else server_side
    args.update(keepalives=1, keepalives_idle=KEEPALIVE_IDLE_S,
                keepalives_interval=KEEPALIVE_INTERVAL_S, keepalives_count=KEEPALIVE_COUNT,
                application_name=application_name, autocommit=True)
    args.setdefault("connect_timeout", CONNECT_TIMEOUT_S)
    return args


class HeldLock:
    """The lock while it is held: its dedicated connection, and a check that it still is."""

    def __init__(self, connection: Any, key: int = LOCK_KEY) -> None:
        self.connection = connection
        self.key = key

    def still_held(self) -> bool:
        """True while the lock connection is alive and this session holds the lock."""
        try:
            row = self.connection.execute(
                "SELECT count(*) FROM pg_locks WHERE pid = pg_backend_pid() "
                "AND locktype = 'advisory' AND granted AND objsubid = 1 "
                "AND classid::bigint = %s AND objid::bigint = %s",
                _key_halves(self.key)).fetchone()
        except Exception:
            return False
        return bool(row and row[0])


def _first_line(exc: BaseException) -> str:
    """The first line of a driver error (libpq adds detail lines; never the password)."""
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _lock_failure(url: str, exc: BaseException) -> StoreError:
    """The lock connection's failure in the store's own words. An outage shows as a refused
    connect or as a connection lost mid-statement, whichever came first: both are the one
    sentence an unreachable store gets (``engine.pg_connect_failure``), never two."""
    from kbmcp_adapters.store.engine import pg_connect_failure
    from kbmcp_adapters.store.urls import safe_url

    state = getattr(exc, "sqlstate", None)
    if state is None or str(state).startswith(("08", "28", "57P", "3D")):
        return pg_connect_failure(safe_url(url), _first_line(exc))
    return StoreFailed(f"the index store's writer lock failed: {_first_line(exc)}")


def _try_lock(conn: Any, key: int) -> bool:
    row = conn.execute("SELECT pg_try_advisory_lock(%s)", (key,)).fetchone()
    return bool(row and row[0])


def store_lock_key(url: str) -> int:
    """The writer lock's key for the index at ``url``: ``LOCK_KEY`` in the default schema,
    one of its own for a collection's schema."""
    return lock_key(lock_name(LOCK_NAME, url))


def _key_halves(key: int = LOCK_KEY) -> tuple[int, int]:
    unsigned = key & 0xFFFF_FFFF_FFFF_FFFF
    return unsigned >> 32, unsigned & 0xFFFF_FFFF


@contextlib.contextmanager
def advisory_lock(url: str, timeout_s: float, purpose: str = "index", *,
                  deadline: float | None = None,
                  check: Callable[[], None] | None = None) -> Iterator[HeldLock]:
    """Hold the index's writer lock in the PostgreSQL database at ``url``.

    Waits at most ``timeout_s`` (or until ``deadline``, a ``time.monotonic()`` value), then
    raises ``WriterBusy`` naming the holder; ``check`` is called while waiting and may raise
    to give up early. ``StoreUnreachable`` when the database cannot be reached or the lock's
    connection is lost while it waits. ``purpose`` is
    accepted for symmetry with the file lock (the holder's name says who, not why).
    """
    import psycopg

    del purpose
    key = store_lock_key(url)
    if deadline is None:
        deadline = time.monotonic() + max(timeout_s, 0.0)
    since = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    try:
        conn = psycopg.connect(**_connect_args(url, _application_name(os.getpid(), since)))
    except psycopg.Error as exc:
        raise _lock_failure(url, exc) from None
    try:
        try:
            while not _try_lock(conn, key):
                if check is not None:
                    check()
                if time.monotonic() >= deadline:
                    row = conn.execute(_HOLDER_SQL, _key_halves(key)).fetchone()
                    raise WriterBusy(
                        f"another writer holds the index lock "
                        f"({_describe(row[0] if row else None)}); waited {timeout_s:g}s. "
                        "Try again when it finishes."
                    )
                time.sleep(max(0.0, min(_POLL_S, deadline - time.monotonic())))
            # "writing since" is when the lock was taken, as with the file lock
            since = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
            conn.execute("SELECT set_config('application_name', %s, false)",
                         (_application_name(os.getpid(), since),))
        except psycopg.Error as exc:
            raise _lock_failure(url, exc) from None
        try:
            yield HeldLock(conn, key)
        finally:
            with contextlib.suppress(psycopg.Error):
                conn.execute("SELECT pg_advisory_unlock(%s)", (key,))
    finally:
        with contextlib.suppress(psycopg.Error):
            conn.close()
