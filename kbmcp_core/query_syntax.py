"""The query syntax both search legs honour: ``"a phrase"`` and ``-term`` (decision 0035).

``parse_query`` reads a query once, left to right, and returns what it asks for:

* plain **terms**, split on white space (``x-ray``, ``--track-origins``, ``OTM-4471``,
  ``-T``, ``-5`` and ``->`` are terms: a hyphen only excludes at the start of a token,
  followed by a quote or by a word of two characters or more that starts with a letter;
  a one-letter ``-T`` is the short option people ask about, not an exclusion);
* **phrases**, text between double quotes, which the keyword leg requires as written;
* **exclusions**, ``-word`` or ``-"a phrase"``: documents holding one are left out of both
  legs.

``ParsedQuery.text`` is what the legs search for: the query with its exclusions cut out
(phrases keep their quotes: the keyword leg's compiler reads them). A query without an
exclusion is handed over unchanged, character for character, so it ranks exactly as
before.

Stray marks of natural text are read as text, never refused: a double quote without a
partner (a question cut short, ``12" pipe``), an empty ``""`` and a lone ``-`` (prose's
dash) open no phrase and exclude nothing; a query holding only such marks searches as it
did before the syntax existed. Refused, as an ``InvalidQuery`` naming the character
(counted from 1): a query that only excludes (nothing left to search for) and more than
``MAX_EXCLUDED`` exclusions.
"""

from __future__ import annotations

from dataclasses import dataclass

from kbmcp_core.errors import InvalidQuery

#: The most exclusions one query may carry (each is one lookup in the keyword index).
MAX_EXCLUDED = 32

_QUOTE = '"'


@dataclass(frozen=True, slots=True)
class ParsedQuery:
    """One query as the syntax reads it."""

    #: the query the legs search for: the original text with the exclusions blanked out
    text: str
    terms: tuple[str, ...] = ()
    phrases: tuple[str, ...] = ()
    excluded: tuple[str, ...] = ()

    @property
    def has_syntax(self) -> bool:
        """Whether the query used a phrase or an exclusion (the response then echoes it)."""
        return bool(self.phrases or self.excluded)

    def applied(self) -> dict[str, list[str]]:
        """What the search applied, echoed in the response as ``query_applied``."""
        return {"terms": list(self.terms), "phrases": list(self.phrases),
                "excluded": list(self.excluded)}


def _error(position: int, what: str, fix: str) -> InvalidQuery:
    return InvalidQuery(f"query syntax: {what} at character {position + 1}: {fix}")


def _closing_quote(text: str, opening: int) -> tuple[str, int]:
    """The phrase opened by the quote at ``opening`` and the index just past its close;
    the phrase is "" for an empty pair and the quote's own end for a quote without a
    partner (both read as text: see the module's docstring)."""
    end = text.find(_QUOTE, opening + 1)
    if end < 0:
        return "", opening + 1
    return " ".join(text[opening + 1 : end].split()), end + 1


def _token_end(text: str, start: int) -> int:
    """Where the plain token at ``start`` ends: white space or a quote."""
    i = start
    while i < len(text) and not text[i].isspace() and text[i] != _QUOTE:
        i += 1
    return i


def parse_query(text: str) -> ParsedQuery:
    """The query's terms, phrases and exclusions; ``InvalidQuery`` on bad syntax."""
    terms: list[str] = []
    phrases: list[str] = []
    excluded: list[str] = []
    cuts: list[tuple[int, int]] = []  # [start, end) of each exclusion, blanked in ``text``
    first_exclusion = -1
    i, n = 0, len(text)
    while i < n:
        char = text[i]
        if char.isspace():
            i += 1
        elif char == _QUOTE:
            phrase, i = _closing_quote(text, i)
            if phrase:
                phrases.append(phrase)
        elif char == "-" and (i == 0 or text[i - 1].isspace()) and _excludes(text, i):
            start = i
            if text[i + 1] == _QUOTE:
                phrase, i = _closing_quote(text, i + 1)
                if not phrase:  # -"" or a dash before a stray quote: text, not syntax
                    continue
            else:
                i = _token_end(text, i + 1)
                phrase = text[start + 1 : i]
                if len(phrase) < 2:  # -T: a short option, searched for as typed
                    terms.append(text[start:i])
                    continue
            excluded.append(phrase)
            cuts.append((start, i))
            if first_exclusion < 0:
                first_exclusion = start
            if len(excluded) > MAX_EXCLUDED:
                raise _error(start, f"more than {MAX_EXCLUDED} exclusions",
                             "exclude fewer terms")
        else:
            end = _token_end(text, i)
            terms.append(text[i:end])
            i = end
    if not cuts:
        return ParsedQuery(text, tuple(terms), tuple(phrases))
    if not phrases and not any(any(c.isalnum() for c in term) for term in terms):
        raise _error(first_exclusion, "the query only excludes",
                     "add a word or a phrase to search for")
    kept = list(text)
    for start, end in cuts:
        kept[start:end] = " " * (end - start)
    return ParsedQuery("".join(kept), tuple(terms), tuple(phrases),
                       tuple(dict.fromkeys(excluded)))


def _excludes(text: str, i: int) -> bool:
    """Whether the ``-`` at ``i`` (a token's start) may exclude: followed by a letter or a
    quote (a one-letter word is then still a term). A lone ``-`` (prose's dash), ``--x``,
    ``-5`` and ``->`` are plain terms."""
    following = text[i + 1] if i + 1 < len(text) else ""
    return following == _QUOTE or following.isalpha()
