"""Match spans: where a query's words occur in a hit's text, as character offsets.

The analysis mirrors the lexical leg's (``kbmcp_adapters.store.lexical``) with standard-
library means only: words are runs of letters and digits, folded to lower case without
diacritics and compared by their Porter stem (the stemmer FTS5 uses), so ``deploying``
in a chunk matches a query saying ``deploys``; English stop words of the query are
ignored unless the query has nothing else. Chinese, Japanese and Korean have no spaces:
their runs match as substrings — every three-character piece of a query run (the lexical
leg's trigrams), or the run itself when it is shorter.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass

from kbmcp_core.cjk import CJK_CLASS, is_cjk
from kbmcp_core.porter import stem

#: Most spans reported for one text (a page of one repeated word needs no more).
MAX_SPANS = 200
#: The query is looked at up to this many characters (a query is a sentence).
MAX_QUERY_CHARS = 4096

_WORD = re.compile(r"[^\W_]+")

#: The lexical leg's English stop words (a query word that matches everything).
STOP_WORDS: frozenset[str] = frozenset(
    """
    a about above after again against all am an and any are as at be because been before
    being below between both but by can could did do does doing down during each few for
    from further had has have having he her here hers herself him himself his how i if in
    into is it its itself just me more most my myself no nor not now of off on once only or
    other our ours ourselves out over own same she should so some such than that the their
    theirs them themselves then there these they this those through to too under until up
    very was we were what when where which while who whom why will with would you your
    yours yourself yourselves
    """.split()  # noqa: SIM905 - a word block reads better than 120 quoted strings
)

Span = tuple[int, int]

#: Any CJK character, and a run of CJK characters or of other word characters.
_HAS_CJK = re.compile(f"[{CJK_CLASS}]")
_SCRIPT_RUN = re.compile(f"[{CJK_CLASS}]+|[^{CJK_CLASS}]+")


def fold(word: str) -> str:
    """Lower case without diacritics, as FTS5's unicode61 tokenizer folds a word."""
    decomposed = unicodedata.normalize("NFKD", word.lower())
    return "".join(c for c in decomposed if not unicodedata.combining(c))


def word_pieces(text: str) -> list[tuple[int, int, bool]]:
    """(start, end, is_cjk) of each word of ``text``; a word mixing scripts is cut where
    the script changes, as the lexical leg cuts it."""
    out: list[tuple[int, int, bool]] = []
    for m in _WORD.finditer(text):
        start, token = m.start(), m.group()
        if _HAS_CJK.search(token) is None:  # most words: one script, no per-character look
            out.append((start, m.end(), False))
            continue
        for run in _SCRIPT_RUN.finditer(token):
            out.append((start + run.start(), start + run.end(), is_cjk(run.group()[0])))
    return out


@functools.lru_cache(maxsize=65536)
def word_stem(word: str) -> str:
    """The Porter stem of ``word`` folded as the lexical index folds it (cached: a text
    repeats its words, and search hits share most of theirs)."""
    return stem(fold(word))


@dataclass(frozen=True, slots=True)
class QueryTerms:
    """What of a query can match: word stems and CJK substrings."""

    stems: frozenset[str]
    substrings: tuple[str, ...]

    def __bool__(self) -> bool:
        return bool(self.stems or self.substrings)


def query_terms(query: str) -> QueryTerms:
    """The stems and CJK substrings of ``query`` (quotes and operators are plain text)."""
    text = query[:MAX_QUERY_CHARS]
    words: list[str] = []
    runs: list[str] = []
    for start, end, cjk in word_pieces(text):
        (runs if cjk else words).append(text[start:end])
    folded = [fold(w) for w in words]
    content = [w for w in folded if w not in STOP_WORDS] or folded
    substrings: list[str] = []
    for run in runs:
        if len(run) < 3:
            # a lone hiragana character is a particle (の, を): it only counts alone
            if not (len(run) == 1 and 0x3040 <= ord(run) <= 0x309F) or len(runs) == 1:
                substrings.append(run)
        else:
            substrings += [run[i : i + 3] for i in range(len(run) - 2)]
    return QueryTerms(frozenset(stem(w) for w in content), tuple(dict.fromkeys(substrings)))


def match_spans(text: str, terms: QueryTerms | str) -> list[Span]:
    """Sorted, non-overlapping ``[start, end)`` character ranges of ``text`` where the
    query matched: whole words whose stem is a query stem, and CJK substrings (touching or
    overlapping pieces are merged into one span). At most ``MAX_SPANS``."""
    if isinstance(terms, str):
        terms = query_terms(terms)
    if not terms or not text:
        return []
    found: list[Span] = []
    if terms.stems:
        for start, end, cjk in word_pieces(text):
            if not cjk and word_stem(text[start:end]) in terms.stems:
                found.append((start, end))
    for sub in terms.substrings:
        at = text.find(sub)
        while at != -1:
            found.append((at, at + len(sub)))
            at = text.find(sub, at + 1)
    return merge(found)[:MAX_SPANS]


def merge(spans: Sequence[Span]) -> list[Span]:
    """Sorted spans with overlapping or touching ones joined."""
    out: list[Span] = []
    for start, end in sorted(spans):
        if out and start <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], end))
        else:
            out.append((start, end))
    return out
