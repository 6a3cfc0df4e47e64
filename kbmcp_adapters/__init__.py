"""kb-mcp adapters: the real I/O behind the core ports, and the composition root.

Library use::

    from kbmcp_adapters import open_knowledge_base
    kb = open_knowledge_base("notes/")

or, with some adapters replaced (any port; the rest are built from the settings)::

    from kbmcp_adapters import KnowledgeBase, bootstrap, settings_for
    kb = KnowledgeBase(bootstrap(settings_for("notes/"), embedder=my_embedder))

or several folders, each a collection (``[[collections]]`` in the config)::

    from kbmcp_adapters import open_collections, settings_for
    collections = open_collections(settings_for(config=Path("kb-mcp.toml")))
    answer = collections.search("rotate the keys", collection=["handbook", "notes"])

Importing this package loads nothing heavy: each name is imported on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kbmcp_core.lazy import lazy_names

if TYPE_CHECKING:
    from kbmcp_adapters.app.bootstrap import bootstrap, settings_for
    from kbmcp_adapters.app.collections import open_collections
    from kbmcp_adapters.app.knowledge_base import KnowledgeBase, open_knowledge_base

__all__ = ["KnowledgeBase", "bootstrap", "open_collections", "open_knowledge_base",
           "settings_for"]

__getattr__ = lazy_names(__name__, {
    "bootstrap": "kbmcp_adapters.app.bootstrap",
    "settings_for": "kbmcp_adapters.app.bootstrap",
    "KnowledgeBase": "kbmcp_adapters.app.knowledge_base",
    "open_knowledge_base": "kbmcp_adapters.app.knowledge_base",
    "open_collections": "kbmcp_adapters.app.collections",
})
