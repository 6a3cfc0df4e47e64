"""Exact token counts for a BERT WordPiece tokenizer, mostly without running it.

The chunker asks for many counts per document (each section, each merge it considers),
and the tokenizer costs about 0.5 ms per kilobyte here: on a first index that was more
than the whole rest of the text phase. For a BERT tokenizer (``BertNormalizer`` with
``clean_text``, ``BertPreTokenizer``, ``WordPiece``) the count of a text is the sum of its
parts: control characters are dropped, white space separates, every punctuation mark is a
token of its own, and each run of letters and digits is cut into word pieces on its own.
So the count is the special tokens plus one lookup per part in a table of parts already
counted (by the tokenizer itself, the first time each is seen). In ASCII text a part is a
run of letters and digits or one punctuation mark; in other text, where accents, CJK
characters and Unicode punctuation follow rules of their own, a part is whatever lies
between ASCII spaces, tabs and line breaks (white space to the tokenizer in every case),
which the tokenizer counts as a whole: parts longer than ``MAX_PART`` are counted and not
remembered. Text holding one of the tokenizer's added tokens (such as ``[SEP]``), or a
tokenizer of another kind, is counted by the tokenizer: ``count`` returns None.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tokenizers import Tokenizer

__all__ = ["WordPieceCounter"]

#: ASCII characters ``clean_text`` removes: controls other than tab, newline, return.
_CONTROLS = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
#: BertPreTokenizer on clean ASCII: runs of letters and digits, each punctuation mark alone.
_PIECES = re.compile(r"[A-Za-z0-9]+|[!-/:-@\[-`{-~]")
#: ASCII white space: a boundary between parts for the tokenizer, whatever surrounds it.
_SPACES = re.compile(r"[ \t\n\r]+")
#: Words remembered at most (a table this size is a few MB); then it starts afresh.
MAX_WORDS = 200_000
#: A non-ASCII part longer than this (characters) is counted each time, not remembered.
MAX_PART = 64


class WordPieceCounter:
    """Counts as ``len(tokenizer.encode(text).ids)`` would, for the texts it can."""

    def __init__(self, tokenizer: Tokenizer, lowercase: bool, added: Sequence[str]) -> None:
        self._tokenizer = tokenizer
        self._lowercase = lowercase
        self._added = tuple(a for a in added if a)
        #: a text holding none of these characters holds no added token (one scan each)
        self._added_starts = tuple({a[0] for a in self._added})
        self._special = len(tokenizer.encode("").ids)
        self._words: dict[str, int] = {}
        self._lock = threading.Lock()

    @classmethod
    def for_tokenizer(cls, tokenizer: Tokenizer) -> WordPieceCounter | None:
        """The counter for ``tokenizer`` (set to no truncation and no padding), or None
        when its pipeline is not the one whose counts add up this way."""
        config: dict[str, Any] = json.loads(tokenizer.to_str())
        normalizer = config.get("normalizer") or {}
        if (normalizer.get("type") != "BertNormalizer" or not normalizer.get("clean_text")
                or (config.get("pre_tokenizer") or {}).get("type") != "BertPreTokenizer"
                or (config.get("model") or {}).get("type") != "WordPiece"
                or config.get("truncation") is not None or config.get("padding") is not None):
            return None
        added = [str(t.get("content", "")) for t in config.get("added_tokens") or []]
        return cls(tokenizer, bool(normalizer.get("lowercase")), added)

    def count(self, text: str) -> int | None:
        """The token count of ``text`` (special tokens included), or None when it must be
        counted by the tokenizer."""
        if any(c in text for c in self._added_starts) and any(a in text for a in self._added):
            return None
        if text.isascii():
            return self._special + self._sum(self._pieces(text))
        total = self._special
        for part in _SPACES.split(text):
            if part.isascii():
                total += self._sum(self._pieces(part))
            elif len(part) <= MAX_PART:
                total += self._sum([part])
            else:
                total += len(self._tokenizer.encode(part, add_special_tokens=False).ids)
        return total

    def _pieces(self, text: str) -> list[str]:
        """The word pieces' units of ASCII text: runs of letters and digits, punctuation."""
        if self._lowercase:
            text = text.lower()
        if _CONTROLS.search(text):
            text = _CONTROLS.sub("", text)
        return _PIECES.findall(text)

    def _sum(self, pieces: list[str]) -> int:
        """The tokens of ``pieces``, each counted once by the tokenizer and remembered."""
        words = self._words
        try:  # most texts hold only words already counted: no set, no list
            return sum(map(words.__getitem__, pieces))
        except KeyError:
            distinct = set(pieces)
            missing = [p for p in distinct if p not in words]
            words = self._learn(missing, {p: words[p] for p in distinct if p in words})
            return sum(map(words.__getitem__, pieces))

    def _learn(self, missing: list[str], known: dict[str, int]) -> dict[str, int]:
        """Count ``missing`` words with the tokenizer and remember them; the table
        returned holds them and ``known`` (the other words of the text at hand)."""
        encodings = self._tokenizer.encode_batch(missing, add_special_tokens=False)
        with self._lock:
            if len(self._words) + len(missing) > MAX_WORDS:
                self._words = dict(known)  # readers holding the old table keep using it
            words = self._words
            words.update(known)
            words.update(zip(missing, (len(e.ids) for e in encodings), strict=True))
            return words
