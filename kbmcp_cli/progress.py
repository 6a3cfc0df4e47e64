"""Progress of an index run on stderr: a labelled bar on a terminal, plain lines otherwise.

On a terminal, one tqdm bar follows the phase running now, labelled with every phase so
far and its counts from its first frame ("indexing: text 120/120 files · vectors 40/300
chunks"); log lines (warnings) are written above the bar through
tqdm, never into it. Without a terminal (logs, CI) a line is printed when a phase starts or
ends, every ``every_s`` seconds while steps arrive, and, from a heartbeat thread, at least
every ``every_s`` seconds while a single step takes long (a big file, the model loading).
"""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from collections.abc import Callable
from typing import IO, Any

import click

#: Without a terminal, a progress line at least this often (seconds).
PLAIN_EVERY_S = 10.0
#: What each phase counts: files read into text rows, then chunks embedded.
UNITS = {"text": "files", "vectors": "chunks"}


def phase_label(phase: str, done: int, total: int) -> str:
    """``"text 40/120 files"``: the phase and its counts."""
    return f"{phase} {done:,}/{total:,} {UNITS.get(phase, 'items')}"


class IndexProgress:
    """The ``progress`` callback of ``KnowledgeBase.index`` for a command line.

    ``tty`` (default: whether stderr is a terminal), ``every_s``, ``clock`` and ``out``
    are for tests; ``close`` ends the bar, the heartbeat and the log redirection.
    """

    def __init__(self, quiet: bool, *, tty: bool | None = None,
                 every_s: float = PLAIN_EVERY_S, clock: Callable[[], float] = time.monotonic,
                 out: IO[str] | None = None) -> None:
        self.quiet = quiet
        self.out = out
        self.tty = (out or sys.stderr).isatty() if tty is None else tty
        self.every_s = every_s
        self.clock = clock
        self.bar: Any = None
        self.last = 0.0
        self.phase: str | None = None
        self.counts: dict[str, tuple[int, int]] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._heartbeat: threading.Thread | None = None
        self._redirect: contextlib.ExitStack | None = None

    def __call__(self, phase: str, done: int, total: int, _item: str) -> None:
        if self.quiet:
            return
        with self._lock:
            first = self.phase != phase
            self.phase = phase
            self.counts[phase] = (done, total)
            if self.tty:
                self._draw(first, done, total)
                return
            now = self.clock()
            if first or done == total or now - self.last >= self.every_s:
                self._emit(now)
                if phase == "text" and done == total:
                    self._echo("kb-mcp: every file is now searchable by keywords")
            self._start_heartbeat()

    def line(self) -> str:
        """Every phase seen so far with its counts: "indexing: text 12/12 files · ..."."""
        return "indexing: " + " · ".join(phase_label(p, *c) for p, c in self.counts.items())

    def _emit(self, now: float, *, waiting: bool = False) -> None:
        self.last = now
        note = " (still working)" if waiting else ""
        self._echo(f"kb-mcp: {self.line()}{note}")

    def _echo(self, text: str) -> None:
        click.echo(text, file=self.out or sys.stderr)

    def _start_heartbeat(self) -> None:
        if self._heartbeat is None:
            self._heartbeat = threading.Thread(target=self._beat, name="kb-mcp-progress",
                                               daemon=True)
            self._heartbeat.start()

    def _beat(self) -> None:
        """A line whenever ``every_s`` passed without one (no step finished meanwhile)."""
        while not self._stop.wait(self.every_s / 4):
            with self._lock:
                now = self.clock()
                if now - self.last >= self.every_s:
                    self._emit(now, waiting=True)

    def _draw(self, first: bool, done: int, total: int) -> None:
        from tqdm import tqdm

        if self.bar is None or first:
            if self.bar is not None:
                self.bar.close()
            self._redirect_logs()
            # labelled from its first frame (tqdm draws one as it is made)
            self.bar = tqdm(total=total, file=self.out or sys.stderr, leave=False,
                            dynamic_ncols=True, desc=self.line(),
                            bar_format="{desc} {bar} {elapsed}<{remaining}")
        self.bar.set_description_str(self.line(), refresh=False)
        self.bar.update(done - self.bar.n)
        if self.phase == "text" and done == total:
            tqdm.write("kb-mcp: every file is now searchable by keywords",
                       file=self.out or sys.stderr)

    def _redirect_logs(self) -> None:
        """Log lines go through tqdm while a bar is up: written above it, then redrawn."""
        if self._redirect is None:
            from tqdm.contrib.logging import logging_redirect_tqdm

            self._redirect = contextlib.ExitStack()
            self._redirect.enter_context(logging_redirect_tqdm())

    def close(self) -> None:
        self._stop.set()
        # a Ctrl-C can land inside Thread.start(): a thread that never started is not joined
        if self._heartbeat is not None and self._heartbeat.ident is not None:
            self._heartbeat.join(timeout=5)
        with self._lock:
            if self.bar is not None:
                self.bar.close()
                self.bar = None
            if self._redirect is not None:
                self._redirect.close()
                self._redirect = None


__all__ = ["PLAIN_EVERY_S", "IndexProgress", "phase_label"]
