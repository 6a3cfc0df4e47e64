"""A package face that imports lazily: each public name is imported on first use.

A package's ``__init__`` that imports its modules eagerly makes importing any one of them
load all of them (and ties them in an import cycle through the face); the faces of
kb-mcp's packages name where each public name lives instead (``lazy_names``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from importlib import import_module
from typing import Any

__all__ = ["lazy_names"]


def lazy_names(package: str, where: Mapping[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` for ``package``: ``where`` maps each public name to the
    module that defines it, imported when the name is first asked for."""

    def __getattr__(name: str) -> Any:
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(import_module(module), name)

    return __getattr__
