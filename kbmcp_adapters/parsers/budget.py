"""What one conversion may produce: characters out, elements walked, seconds spent.

A small hostile file can ask a parser for far more work than its size suggests (one
shared string referenced by every cell, a million nested tags, one huge text run). The
size caps and the ZIP guard bound what is *read*; these budgets bound what is *made*, and
are checked while the parser runs, so a file over budget is refused early with the limit
it broke and the ``[parsers]`` key that sets it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from kbmcp_core.errors import ParseError

__all__ = ["DEFAULT_LIMITS", "Meter", "OverBudget", "ParserLimits", "on_extend"]

#: Who hears of a conversion's extra time (a parser worker tells its pool): see ``on_extend``.
_LISTENERS: list[Callable[[float], None]] = []


def on_extend(listener: Callable[[float], None]) -> None:
    """Call ``listener(seconds)`` whenever a conversion in this process is given
    ``seconds`` more (``Meter.extend``): a parser worker forwards it to its pool, whose
    clock would otherwise stop the worker at ``timeout_seconds``."""
    _LISTENERS.append(listener)


class OverBudget(ParseError):
    """A file whose conversion went over one of its budgets (the file itself may be
    intact: the message names the limit, never "damaged")."""


@dataclass(frozen=True, slots=True)
class ParserLimits:
    """The budgets of one conversion (``[parsers]`` in the configuration)."""

    #: characters of text one file may produce
    max_output_chars: int = 10_000_000
    #: elements one file may hold: tags, paragraphs, cells, pages, shapes
    max_elements: int = 300_000
    #: seconds one conversion may take
    timeout_seconds: float = 60.0


DEFAULT_LIMITS = ParserLimits()

#: How many elements pass between two looks at the clock.
_CLOCK_EVERY = 1024


class Meter:
    """Counts what one conversion produces and raises ``OverBudget`` the moment a
    budget is exceeded. Not thread-safe: one meter per conversion."""

    __slots__ = ("_chars", "_deadline", "_elements", "_until_clock", "limits", "seconds")

    def __init__(self, limits: ParserLimits) -> None:
        self.limits = limits
        self._chars = 0
        self._elements = 0
        self._until_clock = _CLOCK_EVERY
        self._deadline = time.monotonic() + limits.timeout_seconds
        #: the seconds this conversion may take: ``timeout_seconds`` and any extension
        self.seconds = limits.timeout_seconds

    def chars(self, count: int) -> None:
        """``count`` more characters of text were produced."""
        self._chars += count
        if self._chars > self.limits.max_output_chars:
            raise OverBudget(
                f"produces more than {self.limits.max_output_chars:,} characters of text; "
                "limit [parsers].max_output_chars"
            )

    def elements(self, count: int = 1) -> None:
        """``count`` more elements were walked (the clock is read now and then)."""
        self._elements += count
        if self._elements > self.limits.max_elements:
            raise OverBudget(
                f"holds more than {self.limits.max_elements:,} elements (tags, paragraphs, "
                "cells, pages); limit [parsers].max_elements"
            )
        self._until_clock -= count
        if self._until_clock <= 0:
            self._until_clock = _CLOCK_EVERY
            self.clock()

    def clock(self) -> None:
        """Raise ``OverBudget`` when the conversion has run past its time."""
        if time.monotonic() > self._deadline:
            raise OverBudget(
                f"took longer than {self.seconds:g} s to convert; "
                "limit [parsers].timeout_seconds"
            )

    def extend(self, seconds: float) -> None:
        """Give this conversion ``seconds`` more (OCR: for each scanned page it holds),
        and tell the listeners (``on_extend``)."""
        if seconds <= 0:
            return
        self._deadline += seconds
        self.seconds += seconds
        for listener in _LISTENERS:
            listener(seconds)

    def remaining(self) -> float:
        """Seconds left before the conversion is over its time (negative past it)."""
        return self._deadline - time.monotonic()

    def text(self, value: str) -> str:
        """Count ``value`` as produced text and hand it back."""
        self.chars(len(value))
        return value
