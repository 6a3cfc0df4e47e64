"""What the cyclic garbage collector walks: a serving process's heap, settled once it has
answered its first search by meaning (issue 43, goal 3; decision 0057, session-18
addendum), and a one-command process's, dropped whole at exit (goal 1; session-19
addendum).

By then the process holds what it keeps for its life: the SDK's and the web server's
modules, the model's session, LanceDB's modules and tables, the index's caches: about
200,000 objects the cyclic garbage collector would otherwise walk at every full
collection, a pause of about 0.1 s with the interpreter's lock held while every request
in flight waits. ``gc.freeze`` moves them out of its sight after one collection; what
requests allocate afterwards is collected as before (reference counting frees almost all
of it; the young generations catch cycles). Once per process, by the first search that
loaded the model (an MCP ``search`` or a CLI search through the local socket).

A ``kb-mcp`` process started for one command holds the same kind of heap and throws it
away when the command ends. The interpreter's finalization still runs a full collection
over it (about 0.2 s of a cold search's 1.1 s on the bench machine), and a cold search's
imports set off several more while they build it. So the entry point (never a library
caller or a test's in-process runner) pauses the collector for a search, whose one answer
allocates little that outlives it (reference counting frees it), and freezes whatever is
left once any command has returned: exit handlers, flushes and every object's
finalization by reference count still run; only the walk for cycles is skipped.
"""

from __future__ import annotations

import gc
import logging
import threading

log = logging.getLogger("kb_mcp.server")

_lock = threading.Lock()
_settled = [False]


def settle_once() -> None:
    """Collect, then freeze what is left, the first time it is called in this process."""
    if _settled[0]:
        return
    with _lock:
        if _settled[0]:
            return
        gc.collect()
        gc.freeze()
        _settled[0] = True
    log.debug("heap settled: %d objects frozen", gc.get_freeze_count())


def pause_collector() -> None:
    """No cyclic collection in this process from now on (a one-answer command)."""
    gc.disable()


def freeze_for_exit() -> None:
    """Out of the collector's sight: what the process holds as its command returns."""
    gc.freeze()
