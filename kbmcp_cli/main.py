"""The ``kb-mcp`` entry point.

``kb-mcp search`` is first offered to a running server of the same index (decision 0018),
before click and the other commands are imported; everything else, and every search that
server does not answer, goes to the command group in ``kbmcp_cli.commands`` (where each
command is added). ``cli`` and ``KbGroup`` can still be imported from here.
"""

from __future__ import annotations

import sys
from typing import Any


def main() -> None:
    from kbmcp_cli.search_fast import answer

    code = answer(sys.argv[1:])
    if code is not None:
        sys.exit(code)
    from kbmcp_cli.commands import cli

    cli(prog_name="kb-mcp")


def __getattr__(name: str) -> Any:
    if name in ("cli", "KbGroup"):
        from kbmcp_cli import commands

        return getattr(commands, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
