"""The parser worker pool: converts untrusted formats in child processes with memory and
time limits, so a crash, a hang or a runaway allocation in native code (lxml, MuPDF)
costs one file, never the indexing run or the server (decision 0022).

* Workers are started lazily, on the first conversion, as fresh interpreters
  (``python -c``, talking over a socket pair: nothing of the parent's threads, locks or
  open files is inherited, and unlike ``multiprocessing``'s ``spawn`` the parent's
  ``__main__`` is never re-run), at most ``workers`` of them, and reused for later files.
  Each imports its parsers' libraries, then caps its own address space at what it uses
  then plus ``memory_mb``.
* A conversion is the parser's ``convert``; its picklable result comes back and the parent
  chunks it (the embedder's tokenizer stays in the parent). A worker that takes longer
  than ``timeout_seconds`` (plus a grace period: the parser's own clock check usually
  answers first; plus the extra time its conversion says it was given, OCR's seconds per
  scanned page, up to ``MAX_EXTRA_SECONDS``) is killed; one that dies, or runs out of
  memory, is replaced. Each of these is a ``ParseError`` for that one file, naming what
  happened.
* ``close`` stops every worker (a busy one when its file is done); a later conversion
  starts workers again. Pools with workers at interpreter exit are closed then.
"""

from __future__ import annotations

import atexit
import contextlib
import importlib
import json
import os
import resource
import signal
import socket
import subprocess
import sys
import threading
import time
import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import TYPE_CHECKING, Any

from kbmcp_adapters.parsers.budget import ParserLimits, on_extend
from kbmcp_adapters.parsers.code import CodeParser
from kbmcp_adapters.parsers.codelangs import GRAMMAR_MODULES
from kbmcp_adapters.parsers.ocr import MAX_OCR_PAGES, OCR_PAGE_SECONDS
from kbmcp_adapters.parsers.sourcechunks import SourceCitedParser
from kbmcp_adapters.parsers.workerexit import (
    death_message,
    own_peak_bytes,
    reap,
    resident_bytes,
)
from kbmcp_core.errors import ParseError
from kbmcp_core.models import ParsedDocument
from kbmcp_core.outline import HeadingMark
from kbmcp_core.ports import ChunkBudget

if TYPE_CHECKING:
    from kbmcp_adapters.parsers.converted import Convertible

__all__ = ["Isolation", "IsolatedParser", "WorkerPool", "death_message"]

#: Seconds past ``timeout_seconds`` before a busy worker is killed.
GRACE_SECONDS = 5.0
#: Seconds a new worker may take to import its libraries and say it is ready.
START_SECONDS = 120.0
#: The most extra seconds a conversion may be given past ``timeout_seconds`` (OCR's
#: seconds a page times its most pages: a worker's word is not trusted past it).
MAX_EXTRA_SECONDS = MAX_OCR_PAGES * OCR_PAGE_SECONDS
#: Conversions one worker does before it is replaced (memory fragmentation).
TASKS_PER_WORKER = 500
#: Bytes by which the kernel's resident counts may lag (per-thread and per-CPU batches):
#: a worker's peak within this of its parent's is not taken for a peak of its own.
FLOOR_SLACK_BYTES = 16 * 1024 * 1024
#: What a worker runs: its end of the socket pair is the file descriptor in ``argv[1]``.
#: Run with ``-I``: no working folder, PYTHONPATH or user site on the import path (a
#: knowledge base may hold a ``tty.py``). The path is the parent's, handed over in argv[2].
_BOOT = ("import sys, json; sys.path[:] = json.loads(sys.argv[2]); "
         "from kbmcp_adapters.parsers.isolation import worker_main; worker_main()")
#: The libraries each format's parser imports, loaded before the memory cap is set.
_PRELOAD: dict[str, tuple[str, ...]] = {
    "pdf": ("kbmcp_adapters.parsers.mupdf",),  # PyMuPDF without its layout analyser
    "epub": ("lxml.etree",),
    "html": ("bs4", "bs4.builder._lxml", "bs4.dammit"),
    "docx": ("docx", "docx.package", "docx.opc.constants"),
    "pptx": ("pptx", "pptx.package", "pptx.shapes.group"),
    "xlsx": ("openpyxl",),
    "rst": ("docutils.frontend", "docutils.parsers.rst", "docutils.utils"),
    "code": GRAMMAR_MODULES,
    "ocr": ("kbmcp_adapters.parsers.mupdf", "PIL.Image", "PIL.ImageSequence", "numpy"),
}


@dataclass(frozen=True, slots=True)
class Isolation:
    """How converted formats are run: in ``workers`` child processes, each allowed
    ``memory_mb`` MiB above what it uses once its libraries are loaded."""

    workers: int = 2
    memory_mb: int = 1024


class _Worker:
    __slots__ = ("base_rss", "conn", "floor_rss", "generation", "process", "tasks")

    def __init__(self, process: subprocess.Popen[bytes], conn: Connection, generation: int) -> None:
        self.process = process
        self.conn = conn
        self.generation = generation
        self.tasks = 0
        #: its resident memory in bytes once ready (libraries loaded), when measurable
        self.base_rss: int | None = None
        #: this process's own peak when the worker was started: a child's peak as the
        #: kernel reports it starts from it (fork and vfork count the parent's pages)
        self.floor_rss: int | None = None

    def stop(self, kill: bool = False) -> None:
        """End the process: ask politely (``None``, then the closed socket), else kill;
        always reaped."""
        try:
            if not kill:
                self.conn.send(None)
        except OSError:
            kill = True
        self.conn.close()
        if not kill:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(timeout=2)
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()


_OPEN_POOLS: weakref.WeakSet[WorkerPool] = weakref.WeakSet()
_REGISTRY_LOCK = threading.Lock()
_atexit_registered = False


def _close_open_pools() -> None:
    with _REGISTRY_LOCK:
        pools = list(_OPEN_POOLS)
    for pool in pools:
        pool.close()


class WorkerPool:
    """Up to ``isolation.workers`` worker processes converting the given formats."""

    def __init__(
        self, formats: tuple[str, ...], limits: ParserLimits, isolation: Isolation
    ) -> None:
        self.formats = formats
        self.limits = limits
        self.isolation = isolation
        self._idle: list[_Worker] = []
        self._lock = threading.Lock()
        self._slots = threading.BoundedSemaphore(isolation.workers)
        #: bumped by ``close``: a worker of an older generation is stopped, not reused
        self._generation = 0

    def pids(self) -> tuple[int, ...]:
        """The process ids of the idle workers (for diagnostics and the benchmark)."""
        with self._lock:
            return tuple(worker.process.pid for worker in self._idle)

    def convert(self, fmt: str, path: str, data: bytes) -> Any:
        """The parser's ``convert(path, data)`` for ``fmt``, run in a worker."""
        with self._slots:
            worker = self._checkout()
            status: str = "lost"
            try:
                status, payload = self._run(worker, fmt, path, data)
            finally:
                self._checkin(worker, keep=status in ("ok", "refused", "error"))
        if status == "ok":
            return payload
        if status == "refused":
            raise ParseError(str(payload))
        if status == "memory":
            raise ParseError(
                f"parser exceeded its memory limit ({self.isolation.memory_mb} "
                "MiB); limit [parsers].memory_limit_mb"
            )
        raise ParseError(f"unexpected error while parsing ({payload})")

    def close(self) -> None:
        """Stop every idle worker; a busy one is stopped when its conversion ends."""
        with self._lock:
            self._generation += 1
            idle, self._idle = self._idle, []
        for worker in idle:
            worker.stop()
        with _REGISTRY_LOCK:
            _OPEN_POOLS.discard(self)

    # -- one conversion ------------------------------------------------------
    def _run(self, worker: _Worker, fmt: str, path: str, data: bytes) -> tuple[str, Any]:
        """The worker's answer, ``(status, payload)``; a worker lost on the way (timed
        out and killed, or dead) is a ``ParseError`` naming what happened. A conversion
        that is given more time (``budget.Meter.extend``: OCR, per scanned page) says so
        first, and the wait here grows by as much, up to ``MAX_EXTRA_SECONDS``."""
        limit = base = self.limits.timeout_seconds
        deadline = time.monotonic() + limit + GRACE_SECONDS
        try:
            worker.conn.send((fmt, path, data))
            while True:
                if not worker.conn.poll(max(0.0, deadline - time.monotonic())):
                    worker.process.kill()
                    raise ParseError(
                        f"parser timed out after {limit:g} s and was stopped; "
                        "limit [parsers].timeout_seconds"
                    )
                status, payload = worker.conn.recv()
                if status != "more":
                    break
                extra = max(0.0, min(float(payload), MAX_EXTRA_SECONDS + base - limit))
                limit += extra
                deadline += extra
        except (EOFError, OSError):
            raise ParseError(self._death(worker)) from None
        worker.tasks += 1
        return str(status), payload

    def _death(self, worker: _Worker) -> str:
        code, peak = reap(worker.process, 5.0)
        grew = None
        if peak is not None and worker.base_rss is not None and (
                worker.floor_rss is None or peak > worker.floor_rss):
            grew = peak - worker.base_rss  # a peak of the worker's own, not the parent's
        return death_message(code, grew, self.isolation.memory_mb)

    # -- the workers ---------------------------------------------------------
    def _checkout(self) -> _Worker:
        with self._lock:
            if self._idle:
                return self._idle.pop()
            generation = self._generation
        return self._start(generation)

    def _checkin(self, worker: _Worker, keep: bool) -> None:
        alive = keep and worker.process.poll() is None and worker.tasks < TASKS_PER_WORKER
        with self._lock:
            if alive and worker.generation == self._generation:
                self._idle.append(worker)
                return
        worker.stop(kill=not alive)

    def _start(self, generation: int) -> _Worker:
        global _atexit_registered
        with _REGISTRY_LOCK:
            if not _atexit_registered:
                atexit.register(_close_open_pools)
                _atexit_registered = True
            _OPEN_POOLS.add(self)
        ours, theirs = socket.socketpair()
        # The worker imports this very kb-mcp, through exactly the parent's import path.
        path = json.dumps([p for p in sys.path if p])
        try:
            process = subprocess.Popen(
                [sys.executable, "-I", "-c", _BOOT, str(theirs.fileno()), path],
                pass_fds=(theirs.fileno(),),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
            )
        except OSError as exc:
            ours.close()
            raise ParseError(f"the parser worker process could not start ({exc})") from None
        finally:
            theirs.close()
        # The kernel starts the child's peak from this process's pages at the fork (or the
        # vfork's exec): read our own peak once the child has started, so a thread of ours
        # that grew meanwhile is counted too, plus the lag of the kernel's summed counters.
        floor = own_peak_bytes() + FLOOR_SLACK_BYTES
        worker = _Worker(process, Connection(ours.detach()), generation)
        try:
            worker.conn.send((self.formats, self.limits, self.isolation.memory_mb))
            ready = worker.conn.poll(START_SECONDS) and worker.conn.recv() == "ready"
        except (EOFError, OSError):
            ready = False
        if not ready:
            worker.stop(kill=True)
            raise ParseError("the parser worker process could not start")
        worker.base_rss, worker.floor_rss = resident_bytes(process.pid), floor
        return worker


class IsolatedParser:
    """A ``Parser`` whose conversion runs in the pool and whose chunking runs here."""

    def __init__(self, fmt: str, inner: Convertible, pool: WorkerPool) -> None:
        self.fmt = fmt
        self.inner = inner
        self.pool = pool
        self.extensions: tuple[str, ...] = inner.extensions

    def parse(self, path: str, data: bytes, budget: ChunkBudget) -> ParsedDocument:
        return self.inner.document(path, self.pool.convert(self.fmt, path, data), budget)

    def extract_text(self, path: str, data: bytes) -> str:
        return self.inner.text_of(self.pool.convert(self.fmt, path, data))

    def headings(self, path: str, text: str) -> Sequence[HeadingMark] | None:
        """A source-cited format's headings come from its conversion, run in the pool;
        the others' from their served text (Markdown), scanned here."""
        if isinstance(self.inner, SourceCitedParser | CodeParser):
            return self.inner.headings_of(
                self.pool.convert(self.fmt, path, text.encode("utf-8")))
        return self.inner.headings(path, text)


# -- the child -------------------------------------------------------------------
def worker_main() -> None:
    """A worker's life: read its formats and limits, load the parsers, cap the address
    space, then convert until the socket closes. Its socket is ``argv[1]``."""
    from kbmcp_adapters.parsers.converted import convertible

    # Ctrl-C is the parent's to handle. (No PR_SET_PDEATHSIG: it fires when the *thread*
    # that started the worker ends, and reads start workers from short-lived threads; a
    # worker whose parent is gone ends at the closed socket once its file is done.)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    conn = Connection(int(sys.argv[1]))
    formats, limits, memory_mb = conn.recv()
    on_extend(lambda seconds: conn.send(("more", seconds)))  # the pool's clock waits longer
    parsers = {fmt: convertible(fmt, limits, "ocr" in formats) for fmt in formats}
    for fmt in formats:
        for module in _PRELOAD.get(fmt, ()):
            importlib.import_module(module)
    if "ocr" in formats:  # its models are loaded before the cap, like the libraries
        from kbmcp_adapters.parsers.ocr import engine

        engine()
    _cap_address_space(memory_mb)
    conn.send("ready")
    while True:
        try:
            request = conn.recv()
        except (EOFError, OSError):
            return
        if request is None:
            return
        fmt, path, data = request
        del request
        reply = _convert(parsers, fmt, path, data)
        del data
        try:
            conn.send(reply)
        except MemoryError:
            reply = ("memory", None)
            conn.send(reply)
        if reply[0] == "memory":
            return  # a worker that ran out of memory is replaced


def _convert(parsers: dict[str, Convertible], fmt: str, path: str, data: bytes) -> tuple[str, Any]:
    try:
        return "ok", parsers[fmt].convert(path, data)
    except MemoryError:
        return "memory", None
    except ParseError as exc:
        return "refused", str(exc)
    except Exception as exc:  # a parser bug: reported by its name, like in-process
        return "error", type(exc).__name__


def _cap_address_space(memory_mb: int) -> None:
    """Allow ``memory_mb`` MiB of address space beyond what the process maps now."""
    try:
        with open("/proc/self/statm", encoding="ascii") as statm:
            mapped = int(statm.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except OSError:  # no /proc (macOS): the time limit still holds
        return
    cap = mapped + memory_mb * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
