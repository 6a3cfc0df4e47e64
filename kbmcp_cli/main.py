"""The ``kb-mcp`` entry point.

``kb-mcp search`` is first offered to a running server of the same index (decision 0018),
before click and the other commands are imported; everything else, and every search that
server does not answer, goes to the command group in ``kbmcp_cli.commands`` (where each
command is added). ``cli`` and ``KbGroup`` can still be imported from here. The process's
heap is left to exit, not walked by the cyclic collector (``app/heap.py``).
"""

from __future__ import annotations

import sys
from typing import Any


def main() -> None:
    from kbmcp_cli.search_fast import answer

    code = answer(sys.argv[1:])
    if code is not None:
        sys.exit(code)
    from kbmcp_adapters.app import heap

    if sys.argv[1:2] == ["search"]:  # one answer: nothing for the collector to find
        heap.pause_collector()
    from kbmcp_cli.commands import cli

    try:
        cli(prog_name="kb-mcp")
    finally:  # the process ends here: its last collection would walk all of it
        heap.freeze_for_exit()


def __getattr__(name: str) -> Any:
    if name in ("cli", "KbGroup"):
        from kbmcp_cli import commands

        return getattr(commands, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
