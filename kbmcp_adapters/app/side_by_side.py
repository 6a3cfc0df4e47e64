"""A hybrid search's two legs on two threads (the ``SideBySide`` port; decision 0058).

The keyword leg (SQLite or PostgreSQL) and the vector leg (the query's embedding, then
LanceDB's Rust) both wait outside the interpreter's lock, so run at once a search costs
the slower leg instead of their sum. The first call runs on a worker of a small pool the
knowledge base's container owns and shuts down (``close``); the second on the caller's
thread. When every worker is busy (many searches at once) the call runs in turn on the
caller's thread: a leg never waits in a queue behind another search's.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TypeVar

__all__ = ["LEG_WORKERS", "ThreadedLegs"]

A = TypeVar("A")
B = TypeVar("B")

#: Workers running a first leg at once (searches beyond this run their legs in turn).
LEG_WORKERS = 4


class ThreadedLegs:
    """``SideBySide`` on a pool of ``workers`` threads, started on first use."""

    def __init__(self, workers: int = LEG_WORKERS) -> None:
        self._workers = workers
        self._free = threading.BoundedSemaphore(workers)
        self._lock = threading.Lock()
        self._pool: ThreadPoolExecutor | None = None
        self._closed = False

    def both(self, first: Callable[[], A], second: Callable[[], B]) -> tuple[A, B]:
        pending = self._submit(first)
        if pending is None:  # no worker free, or closed: one after the other
            return first(), second()
        try:
            other = second()
        finally:
            ran = pending.result()  # the first leg has ended, whatever the second did
        return ran, other

    def _submit(self, call: Callable[[], A]) -> Future[A] | None:
        if not self._free.acquire(blocking=False):
            return None
        with self._lock:
            if self._closed:
                self._free.release()
                return None
            if self._pool is None:
                self._pool = ThreadPoolExecutor(self._workers,
                                                thread_name_prefix="kb-mcp-search-leg")
            pending = self._pool.submit(call)
        pending.add_done_callback(lambda _done: self._free.release())
        return pending

    def close(self) -> None:
        """Stop the workers (the legs under way end first); later calls run in turn."""
        with self._lock:
            self._closed = True
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True)
