"""``python -m kbmcp_cli``: the same entry point as the ``kb-mcp`` console script."""

from kbmcp_cli.main import main

main()
