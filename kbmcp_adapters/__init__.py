"""kb-mcp adapters: the real I/O behind the core ports, and the composition root."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kbmcp_adapters.app.knowledge_base import KnowledgeBase

__all__ = ["KnowledgeBase", "open_knowledge_base"]


def open_knowledge_base(kb_path: Any = None, **settings: Any) -> KnowledgeBase:
    """Open (or prepare to create) the knowledge base at ``kb_path``; see KnowledgeBase."""
    from kbmcp_adapters.app.knowledge_base import open_knowledge_base as _open

    return _open(kb_path, **settings)


def __getattr__(name: str) -> Any:
    if name == "KnowledgeBase":
        from kbmcp_adapters.app.knowledge_base import KnowledgeBase

        return KnowledgeBase
    raise AttributeError(name)
