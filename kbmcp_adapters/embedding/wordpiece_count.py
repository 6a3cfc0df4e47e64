"""Exact token counts of ASCII text for a BERT WordPiece tokenizer, without running it.

The chunker asks for many counts per document (each section, each merge it considers),
and the tokenizer costs about 0.5 ms per kilobyte here: on a first index that was more
than the whole rest of the text phase. For a BERT tokenizer (``BertNormalizer`` with
``clean_text``, ``BertPreTokenizer``, ``WordPiece``) the count of ASCII text is the sum of
its parts: control characters are dropped, white space separates, every punctuation mark
is a token of its own, and each run of letters and digits is cut into word pieces on its
own. So the count is the special tokens plus one lookup per word in a table of words
already counted (by the tokenizer itself, the first time each word is seen). Anything else
(non-ASCII text, text holding one of the tokenizer's added tokens such as ``[SEP]``, a
tokenizer of another kind) is counted by the tokenizer: ``count`` returns None.
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
#: Words remembered at most (a table this size is a few MB); then it starts afresh.
MAX_WORDS = 200_000


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
        if not text.isascii():
            return None
        if any(c in text for c in self._added_starts) and any(a in text for a in self._added):
            return None
        if self._lowercase:
            text = text.lower()
        if _CONTROLS.search(text):
            text = _CONTROLS.sub("", text)
        pieces = _PIECES.findall(text)
        words = self._words
        try:  # most texts hold only words already counted: no set, no list
            return self._special + sum(map(words.__getitem__, pieces))
        except KeyError:
            distinct = set(pieces)
            missing = [p for p in distinct if p not in words]
            words = self._learn(missing, {p: words[p] for p in distinct if p in words})
            return self._special + sum(map(words.__getitem__, pieces))

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
