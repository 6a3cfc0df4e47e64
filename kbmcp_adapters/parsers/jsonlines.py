"""Where each value of a JSON text sits: the line it starts on, for every value, found by
one pass of a tokenizer over text ``json.loads`` has already accepted (the notebook
parser cites cells by the lines of the ``.ipynb`` file)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

from kbmcp_adapters.parsers.budget import Meter

__all__ = ["Located", "locate"]

_TOKEN = re.compile(r'(\s+)|("[^"\\]*(?:\\.[^"\\]*)*")|([{}\[\]:,])|([^\s{}\[\]:,"]+)')


@dataclass(slots=True)
class Located:
    """A JSON value's 1-based start line (0: not in the text) and its members."""

    line: int = 0
    members: dict[str | int, Located] = field(default_factory=dict)

    def child(self, *keys: str | int) -> Located:
        """The member at ``keys`` (object keys or list indices); line 0 when absent."""
        node = self
        for key in keys:
            found = node.members.get(key)
            if found is None:
                return Located()
            node = found
        return node


@dataclass(slots=True)
class _Frame:
    node: Located
    is_object: bool
    key: str | None = None
    index: int = 0


def locate(text: str, meter: Meter) -> Located:
    """The located tree of ``text`` (a valid JSON document)."""
    root = Located()
    stack: list[_Frame] = []
    line = 1
    expect_key = False
    placed = False
    for match in _TOKEN.finditer(text):
        space, string, mark, literal = match.groups()
        if space is not None:
            line += space.count("\n")
            continue
        if mark in (",", ":"):
            if mark == "," and stack and stack[-1].is_object:
                expect_key = True
            continue
        if mark in ("}", "]"):
            stack.pop()
            expect_key = False
            continue
        if string is not None and expect_key and stack:
            key = json.loads(string)
            stack[-1].key = key if isinstance(key, str) else str(key)
            expect_key = False
            continue
        node = root if not placed else Located(line)
        node.line = line
        placed = True
        if stack:
            frame = stack[-1]
            if frame.is_object and frame.key is not None:
                frame.node.members[frame.key] = node
            elif not frame.is_object:
                frame.node.members[frame.index] = node
                frame.index += 1
        if mark in ("{", "["):
            meter.elements()
            stack.append(_Frame(node, mark == "{"))
            expect_key = mark == "{"
    return root
