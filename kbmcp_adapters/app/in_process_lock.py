"""The in-process writer lock: one writer at a time in this process, stoppable runs.

An index run in ``kb-mcp serve`` (the watcher's sync or a ``rebuild_index`` call) waits
first for the other writers of its own process (``InProcessWriter`` here), then for the
cross-process lock (``kbmcp_adapters.store.cross_process_lock``). Both waits share one
deadline, ``[lock].timeout_seconds``, so a caller hears ``WriterBusy`` within the timeout it
configured.

A run can also be asked to stop: it then ends at its next safe point (between two
documents, or between two embedding calls) by raising ``IndexRunStopped``. What it had
not stored is left exactly as a killed run leaves it, which the next run completes; this
is how shutdown stays bounded while a long sync is in progress.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime

from kbmcp_core.errors import EmbeddingRejected, WriterBusy
from kbmcp_core.models import Vector
from kbmcp_core.ports import Embedder

#: How often a waiting writer looks at its deadline and at a stop request (s).
POLL_S = 0.05

#: Raises IndexRunStopped when a stop was asked for; called at every safe point.
StopCheck = Callable[[], None]


class IndexRunStopped(Exception):  # noqa: N818  (a control signal, like CancelledError)
    """An index run stopped at a safe point because it was asked to (shutdown, or its
    watcher was stopped). Nothing half-written is left; the next run completes the work."""


def stop_check(*events: threading.Event | None) -> StopCheck:
    """A check that raises IndexRunStopped once any of ``events`` is set."""
    watched = [e for e in events if e is not None]

    def check() -> None:
        if any(e.is_set() for e in watched):
            raise IndexRunStopped("the index run was stopped (the server is shutting down)")

    return check


class InProcessWriter:
    """The writer slot of one process, taken with a deadline rather than forever."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._holder: tuple[str, str] | None = None  # (purpose, since)
        self._writing = False

    @contextlib.contextmanager
    def hold(
        self, purpose: str, deadline: float, timeout_s: float, check: StopCheck
    ) -> Iterator[Callable[[], None]]:
        """Hold the slot; yields a callable to say the holder now writes (until then it
        is said to be waiting for another process)."""
        while not self._lock.acquire(timeout=max(0.0, min(POLL_S, deadline - time.monotonic()))):
            check()
            if time.monotonic() >= deadline:
                what, since = self._holder or ("another index run", "?")
                doing = ("has been writing the index" if self._writing
                         else "has been waiting for another process's writer lock")
                raise WriterBusy(
                    f"{what} in this process {doing} since {since}; waited {timeout_s:g}s. "
                    "Try again when it finishes."
                )
        self._holder = (purpose, datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"))
        self._writing = False
        try:
            yield self._now_writing
        finally:
            self._holder = None
            self._writing = False
            self._lock.release()

    def _now_writing(self) -> None:
        self._writing = True


class StoppableEmbedder:
    """An ``Embedder`` that embeds in length-sorted groups and checks for a stop request
    between them, so a stop never waits for more than one group."""

    def __init__(self, inner: Embedder, check: StopCheck, group: int) -> None:
        self._inner = inner
        self._check = check
        self._group = max(1, group)

    @property
    def model_id(self) -> str:
        return self._inner.model_id

    @property
    def dimension(self) -> int:
        return self._inner.dimension

    @property
    def max_tokens(self) -> int:
        return self._inner.max_tokens

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        return self._inner.count_tokens(texts)

    def coverage(self, text: str) -> float:
        return self._inner.coverage(text)

    def embed_query(self, text: str) -> Vector:
        return self._inner.embed_query(text)

    def embed_documents(self, texts: Sequence[str]) -> list[Vector]:
        # similar lengths side by side, as the embedder itself batches them
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        out: list[Vector | None] = [None] * len(texts)
        refused: dict[int, str] = {}  # texts an embedding service refused (0037)
        for start in range(0, len(order), self._group):
            self._check()
            part = order[start : start + self._group]
            try:
                got: list[Vector | None] = list(
                    self._inner.embed_documents([texts[i] for i in part]))
            except EmbeddingRejected as exc:
                got = exc.vectors
                refused.update({part[j]: why for j, why in exc.reasons.items()})
            for i, vector in zip(part, got, strict=True):
                out[i] = vector
        if refused:
            raise EmbeddingRejected(out, refused)
        return [v for v in out if v is not None]


__all__ = ["InProcessWriter", "IndexRunStopped", "StopCheck", "StoppableEmbedder", "stop_check"]
