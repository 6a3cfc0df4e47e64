"""How a parser worker ended (decision 0022): its exit code or signal, its peak memory,
and the one-line message that names them (and memory only when the worker itself grew
to near its limit). Split from ``isolation``, the pool that uses it."""

from __future__ import annotations

import os
import resource
import signal
import subprocess
import sys
import time

__all__ = ["NEAR_THE_LIMIT", "death_message", "own_peak_bytes", "reap", "resident_bytes"]

#: Share of ``memory_mb`` a worker's growth must reach for its death to be put down to
#: memory (its resident peak, measured; the cap itself bounds its address space).
NEAR_THE_LIMIT = 0.9
#: Signals that stop a process from outside (a person, a supervisor, the OOM killer).
_KILLED = frozenset({signal.SIGKILL, signal.SIGTERM, signal.SIGINT, signal.SIGHUP})


def death_message(code: int | None, grew: int | None, memory_mb: int) -> str:
    """What is known of a worker that died mid-conversion: the signal or exit code, and
    memory only when the worker measurably grew to near its limit (``grew``: bytes of
    resident memory past its size when it was ready; None when not measured)."""
    memory = ""
    if grew is not None and grew >= NEAR_THE_LIMIT * memory_mb * 1024 * 1024:
        memory = (f" after growing by {grew / 1024 / 1024:,.0f} MiB, near its memory limit "
                  f"({memory_mb:,} MiB); limit [parsers].memory_limit_mb")
    if code is None:
        return "parser worker stopped answering" + memory
    if code >= 0:
        return f"parser worker ended unexpectedly (exit code {code})" + memory
    name = signal.Signals(-code).name if -code in signal.valid_signals() else str(-code)
    return f"parser {'was killed' if -code in _KILLED else 'crashed'} ({name})" + memory


def reap(process: subprocess.Popen[bytes], seconds: float) -> tuple[int | None, int | None]:
    """Wait up to ``seconds`` for ``process`` to end: its return code (None if it did
    not) and its peak resident memory in bytes (None when not measured)."""
    deadline = time.monotonic() + seconds
    pause = 0.001
    while True:
        try:
            pid, status, usage = os.wait4(process.pid, os.WNOHANG)
        except ChildProcessError:  # reaped already: the code is known, the peak is not
            return process.poll(), None
        if pid:
            process.returncode = os.waitstatus_to_exitcode(status)
            unit = 1 if sys.platform == "darwin" else 1024  # ru_maxrss: bytes there, KiB here
            return process.returncode, usage.ru_maxrss * unit
        if time.monotonic() >= deadline:
            return None, None
        time.sleep(pause)
        pause = min(pause * 2, 0.05)


def own_peak_bytes() -> int:
    """This process's peak resident memory in bytes."""
    unit = 1 if sys.platform == "darwin" else 1024  # ru_maxrss: bytes there, KiB here
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * unit


def resident_bytes(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/statm", encoding="ascii") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):  # no /proc (macOS): nothing measured
        return None
