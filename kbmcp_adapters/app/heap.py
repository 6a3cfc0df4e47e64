"""A serving process's heap, settled once it has answered its first search by meaning
(issue 43, goal 3; decision 0057, session-18 addendum).

By then the process holds what it keeps for its life: the SDK's and the web server's
modules, the model's session, LanceDB's modules and tables, the index's caches: about
200,000 objects the cyclic garbage collector would otherwise walk at every full
collection, a pause of about 0.1 s with the interpreter's lock held while every request
in flight waits. ``gc.freeze`` moves them out of its sight after one collection; what
requests allocate afterwards is collected as before (reference counting frees almost all
of it; the young generations catch cycles). Once per process, by the first search that
loaded the model (an MCP ``search`` or a CLI search through the local socket).
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
