"""Compile arbitrary user text into safe SQLite FTS5 MATCH expressions (pure string work).

Two expressions come out of one query:

* ``words`` for the ``fts_words`` table (porter + unicode61): every word is emitted as a
  double-quoted FTS5 string, so operators typed by the user (AND, OR, NOT, NEAR, ``*``,
  ``:``, ``^``, parentheses, column filters) are always literal. Free words are OR-joined
  (BM25 ranks chunks matching more of them higher) after English stop words are dropped;
  text inside matched double quotes is a phrase that must appear as written.
* ``grams`` for the ``fts_grams`` table (trigram): runs of CJK characters are cut into
  overlapping 3-character substrings, OR-joined. Runs shorter than 3 characters cannot use
  a trigram index; they are returned as ``short_runs`` for a substring scan instead.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# One definition of CJK text (kbmcp_core.cjk) and of the stop words, shared with the match
# spans, so a span marks exactly what this compiler lets the lexical leg match.
from kbmcp_core.cjk import is_cjk
from kbmcp_core.releases import RELEASE
from kbmcp_core.spans import STOP_WORDS

#: Input beyond this many characters is ignored (a search query is a sentence, not a file).
MAX_INPUT_CHARS = 4096
#: Most terms (words, phrases or trigrams) one expression may carry.
MAX_TERMS = 64
#: Words longer than this are dropped: no tokenizer keeps them as one useful token.
MAX_TOKEN_CHARS = 128
#: Most short CJK runs handed to the substring fallback.
MAX_SHORT_RUNS = 16

_WORD = re.compile(r"[^\W_]+")
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")

#: At most this many terms are checked for how much of the query a chunk covers.
MAX_COVERAGE_TERMS = 32


@dataclass(frozen=True, slots=True)
class Terms:
    """One match expression as plain terms (never query syntax): a row matches when it
    holds every ``required`` term, or, with none required, any ``optional`` one. A term
    of several words is a phrase. Each store renders it in its own query language."""

    required: tuple[str, ...] = ()
    optional: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.required or self.optional)

    @property
    def all(self) -> tuple[str, ...]:
        return self.required + self.optional

    def fts5(self) -> str | None:
        """``r1 AND r2 AND (r1 OR o1 OR o2)``: required terms filter, optional ones rank."""
        required = [quote(t) for t in self.required]
        optional = [quote(t) for t in self.optional]
        if not required:
            return " OR ".join(optional) or None
        if not optional:
            return " AND ".join(required)
        return " AND ".join(required) + " AND (" + " OR ".join([required[0], *optional]) + ")"


@dataclass(frozen=True, slots=True)
class LexicalQuery:
    """Everything the store needs to run the lexical leg for one user query."""

    words: str | None
    grams: str | None
    short_runs: tuple[str, ...]
    has_cjk: bool
    #: the quoted terms whose presence in a chunk measures how much of the query it covers
    word_terms: tuple[str, ...] = ()
    gram_terms: tuple[str, ...] = ()
    #: the same expressions and coverage terms unquoted, for a store without FTS5
    word_match: Terms = Terms()
    gram_match: Terms = Terms()
    word_coverage: tuple[str, ...] = ()
    gram_coverage: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class _Analysis:
    free_words: tuple[str, ...]
    phrases: tuple[tuple[str, ...], ...]
    free_runs: tuple[str, ...]
    quoted_runs: tuple[str, ...]
    #: the release numbers of the free text, each written both ways (``_release_forms``)
    releases: tuple[str, ...] = ()


def _release_forms(text: str) -> list[str]:
    """Each release number of ``text`` with and without its "v": release notes title
    "Git v2.0" where a question says "git 2.0", and the other way round. The words alone do
    not bring them together: SQLite's tokenizer reads "v2.0" as ``v2`` and ``0``, and
    PostgreSQL's keeps "2.0" and "v2.0" as one word each. They become optional terms (a
    phrase of its parts on SQLite, the one word on PostgreSQL): a chunk that writes the
    number either way ranks higher, none is required, and what the query covers
    (``word_coverage``) is still counted on the words as typed."""
    forms: list[str] = []
    for found in RELEASE.findall(text):
        bare = found.lower().lstrip("v")
        forms += [bare, "v" + bare]
    return forms


def quote(term: str) -> str:
    """An FTS5 string literal: the term in double quotes, inner quotes doubled."""
    return '"' + term.replace('"', '""') + '"'


def clean(text: str) -> str:
    """Cut to ``MAX_INPUT_CHARS`` and turn NUL and other control characters into spaces."""
    return _CONTROL.sub(" ", text[:MAX_INPUT_CHARS])


def _split_quoted(text: str) -> tuple[list[str], list[str]]:
    """(plain parts, quoted parts); an unmatched last quote is plain text."""
    parts = text.split('"')
    if len(parts) % 2 == 0:
        parts[-2:] = [parts[-2] + " " + parts[-1]]
    return parts[0::2], parts[1::2]


def _segments(text: str) -> tuple[list[str], list[str]]:
    """(non-CJK words, CJK runs) of ``text``, in order of appearance."""
    words: list[str] = []
    runs: list[str] = []
    for token in _WORD.findall(text):
        start = 0
        for i in range(1, len(token) + 1):
            if i == len(token) or is_cjk(token[i]) != is_cjk(token[start]):
                piece = token[start:i]
                if is_cjk(piece[0]):
                    runs.append(piece[:MAX_TOKEN_CHARS])
                elif len(piece) <= MAX_TOKEN_CHARS:
                    words.append(piece)
                start = i
    return words, runs


def _analyse(text: str) -> _Analysis:
    plain, quoted = _split_quoted(clean(text))
    free_words: list[str] = []
    free_runs: list[str] = []
    for part in plain:
        words, runs = _segments(part)
        free_words += words
        free_runs += runs
    phrases: list[tuple[str, ...]] = []
    quoted_runs: list[str] = []
    for part in quoted:
        words, runs = _segments(part)
        if words:
            phrases.append(tuple(w.lower() for w in words))
        quoted_runs += runs
    return _Analysis(
        free_words=tuple(w.lower() for w in free_words),
        phrases=tuple(phrases),
        free_runs=tuple(free_runs),
        quoted_runs=tuple(quoted_runs),
        releases=tuple(f for part in plain for f in _release_forms(part)),
    )


def _dedup(items: list[str], cap: int) -> list[str]:
    return list(dict.fromkeys(items))[:cap]


def _combine(required: list[str], optional: list[str]) -> Terms:
    """Deduplicated and capped at ``MAX_TERMS``; a required term is never optional too."""
    required = _dedup(required, MAX_TERMS)
    optional = _dedup([t for t in optional if t not in required], MAX_TERMS - len(required))
    return Terms(tuple(required), tuple(optional))


def _trigrams(run: str) -> list[str]:
    return [run[i : i + 3] for i in range(len(run) - 2)]


def _words_terms(analysis: _Analysis) -> Terms:
    content = [w for w in analysis.free_words if w not in STOP_WORDS]
    free = content or list(analysis.free_words)
    if analysis.releases:  # "2" and "0" of "2.0" alone match any number: the forms instead
        parts = {part for form in analysis.releases for part in re.split(r"[.v]", form)}
        free = [w for w in free if w not in parts and w.lstrip("v") not in parts] or free
    return _combine([" ".join(p) for p in analysis.phrases], free + list(analysis.releases))


def _grams_terms(analysis: _Analysis) -> Terms:
    runs = analysis.free_runs + analysis.quoted_runs
    if not runs:
        # No CJK: whole words (and phrases) become substring matches, a fallback for
        # words the stemmer cannot connect ("config" inside "configuration").
        phrases = [" ".join(p) for p in analysis.phrases]
        if any(len(p) < 3 for p in phrases):
            return Terms()
        words = [w for w in analysis.free_words if len(w) >= 3 and w not in STOP_WORDS]
        return _combine(phrases, words)
    # CJK text: trigrams of each run, plus the Latin words of a mixed query as substrings,
    # so one BM25 ranks the whole query (measured: docs/decisions/0007-search-fusion.md).
    required = [r for r in analysis.quoted_runs if len(r) >= 3]
    required += [" ".join(p) for p in analysis.phrases if len(" ".join(p)) >= 3]
    optional = [g for r in analysis.free_runs for g in _trigrams(r)]
    optional += [w for w in analysis.free_words if len(w) >= 3 and w not in STOP_WORDS]
    return _combine(required, optional)


def _short_runs(analysis: _Analysis) -> tuple[str, ...]:
    runs = analysis.free_runs + analysis.quoted_runs
    short = [r for r in runs if len(r) < 3]
    # A lone hiragana character is almost always a particle (の, を, は): it would match
    # every Japanese chunk, so it only counts when the query has nothing else.
    content = [r for r in short if not (len(r) == 1 and 0x3040 <= ord(r) <= 0x309F)]
    has_other = analysis.free_words or analysis.phrases or len(short) < len(runs)
    if not content and has_other:
        return ()
    return tuple(_dedup(content or short, MAX_SHORT_RUNS))


def compile_query(text: str) -> LexicalQuery:
    """All lexical forms of one user query, computed from a single analysis."""
    analysis = _analyse(text)
    content = [w for w in analysis.free_words if w not in STOP_WORDS] or list(analysis.free_words)
    word_terms = [" ".join(p) for p in analysis.phrases] + content
    gram_terms = [g for r in analysis.free_runs for g in _trigrams(r)]
    gram_terms += [r for r in analysis.quoted_runs if len(r) >= 3]
    gram_terms += [w for w in content if len(w) >= 3]
    word_coverage = tuple(_dedup(word_terms, MAX_COVERAGE_TERMS))
    gram_coverage = tuple(_dedup(gram_terms, MAX_COVERAGE_TERMS))
    word_match, gram_match = _words_terms(analysis), _grams_terms(analysis)
    return LexicalQuery(
        words=word_match.fts5(),
        grams=gram_match.fts5(),
        short_runs=_short_runs(analysis),
        has_cjk=bool(analysis.free_runs or analysis.quoted_runs),
        word_terms=tuple(quote(t) for t in word_coverage),
        gram_terms=tuple(quote(t) for t in gram_coverage),
        word_match=word_match,
        gram_match=gram_match,
        word_coverage=word_coverage,
        gram_coverage=gram_coverage,
    )
