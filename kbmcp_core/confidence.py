"""``low_confidence``: does a search response hold a clear answer, or should the client say
it found none?

Search always returns its best candidates, even for a question the knowledge base has
nothing on; the flag tells an agent to say "not found" instead of answering from them.
It is decided from ``Evidence``: facts about the question and the index, never about
the page asked for. The legs of a search fetch more candidates the larger its ``limit``;
the evidence reads only the first ``CONFIDENCE_DEPTH`` of each leg, ranked by the leg's
own score (the same candidates at every limit: decision 0056), so asking for 3 results or
for 20 gives the same flag.

The decision (decision 0028, refitted across folders in decision 0056):

* **keywords matched clearly** (the best lexical relevance, the share of the query's
  weight one chunk holds, is at least ``MIN_LEXICAL``): not low;
* else, when the model **can read** the query (at least half of it, ``coverage``): low
  when its best cosine similarity is below ``MIN_SIMILARITY`` (nothing is about the
  question, in words or in meaning) or stands less than ``MIN_LEAD`` above the
  ``LEAD_RANK``-th best document's (nothing in particular is: in a large corpus some page
  is always loosely near a question it does not answer, and so are several others).
  Documents, not chunks: a long document that answers has many chunks near the
  question, all about its subject, and counted as chunks they hid the lead its answer
  has over the rest of the folder (decision 0028, addendum of session 11). A folder with
  fewer documents than that among the candidates compares with ``FLOOR_SIMILARITY``, what
  a question's nearest unrelated page scores, rather than with nothing;
  Also low when a word of the question occurs in no chunk at all and the best similarity
  is below ``unseen_bar(chunks)``: a question naming software the folder does not hold
  has a word nothing in the index has (``unseen_terms``), a fact of the index that no
  ``limit`` changes (decision 0056, addendum). A small folder lacks everyday words by
  chance (a handbook of a hundred chunks has no "fever" or "keycard" although it answers
  the question), so the bar is 0 up to ``UNSEEN_MIN_CHUNKS`` chunks and rises with the
  folder's size to ``UNSEEN_SIMILARITY`` at ``UNSEEN_FULL_CHUNKS`` (eighth addendum: it
  was a step at 1,000 chunks); and, at any size, low when such a question's best
  document leads the ``LEAD_RANK``-th by less than ``UNSEEN_LEAD`` (a word nothing holds
  asks the best document to stand out more; read only when the candidates hold that many
  documents, not against ``FLOOR_SIMILARITY``: ninth addendum);
  Also low when the best of the ``NEAR_DEPTH`` chunks nearest by meaning holds less than
  ``near_bar(chunks)`` of the question's words the index holds, each weighed by how few
  chunks hold it (``near_share``; decision 0056, fifth addendum): a question about a
  program a folder mentions in passing (Valgrind, systemd in gdb's and GnuPG's release
  notes) finds chunks about its other words, none naming the program. Fixed by the index
  and the vector leg's best chunks, not by ``limit``; a small folder's paraphrased
  questions name words held elsewhere, so the bar is 0 up to ``NEAR_MIN_CHUNKS`` chunks
  and rises with the folder's size to ``NEAR_SHARE`` at ``NEAR_FULL_CHUNKS``, smoothly,
  so that an added document does not flip a folder from never flagged to flagged (sixth
  addendum);
* when the model cannot read the query (Japanese for an English model) or did not run
  (``lexical`` mode), only keywords can judge: low when nothing matched at all;
* in ``vector`` mode (no keywords at all) only the best similarity counts: without
  keyword evidence the lead test flags four in ten answerable questions.

An empty result is always low.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from kbmcp_core.keyword_pool import KeywordStatistics
from kbmcp_core.models import StoredChunk
from kbmcp_core.porter import stem
from kbmcp_core.spans import fold, word_pieces

#: Below this cosine similarity the best semantic match is about something else (decision
#: 0028: most questions about software a corpus does not cover score under it on small
#: corpora; answerable questions rarely do). Refitted with the unseen-word test
#: (decision 0056, addendum): 0.33 before.
MIN_SIMILARITY = 0.30
#: ... and a best match leading the ``LEAD_RANK``-th best document by less than this stands
#: out from nothing (a large corpus: unanswerable questions still find pages at 0.4-0.6).
#: Refitted on eight folders (decision 0056): 0.15 before, then 0.10; with the unseen-word
#: test (decision 0056, addendum) 0.08, where the fit's grid starts.
MIN_LEAD = 0.08
#: The rank (among documents, each by its best chunk) whose similarity the best must lead.
LEAD_RANK = 10
#: What the ``LEAD_RANK``-th document counts as when the candidates hold fewer documents
#: (what a question's nearest unrelated page scores; fitted with the unseen-word test,
#: decision 0056, addendum: 0 before, then 0.25; 0 again in the refit on text headings and
#: folder-read vectors, seventh addendum: a folder of ten files compared with 0.25 flagged
#: 6 of the Debian FAQs' 127 answerable questions, with 0 two).
FLOOR_SIMILARITY = 0.0
#: At or above this lexical relevance (0–1) the words of the query clearly occur in a chunk.
#: Refitted on eight folders (decision 0056): 0.20 before, which let a question about
#: Subversion or Mercurial pass on git's release notes (they name both, answer neither).
MIN_LEXICAL = 0.50
#: The share of a query the model must read for its similarity to count.
MIN_READABLE = 0.5
#: A folder with at least ``UNSEEN_FULL_CHUNKS`` chunks holds any everyday word somewhere,
#: so a word of the question that no chunk holds names something the folder does not
#: (decision 0056, addendum: of the answerable questions, none in the folders of 1,400
#: chunks and more has one; up to a third in those of 70-600 chunks). Below
#: ``UNSEEN_MIN_CHUNKS`` such a word says nothing; in between the test's similarity bar
#: rises with the log of the size (eighth addendum: a step at 1,000 chunks until then; the
#: end tried at 1,000, 2,000 and 3,000, the start at 0.3 and 0.5 of it: every held-out
#: folder as with the step, and a start at 300 reaches the Debian FAQs' 674 chunks, whose
#: answerable questions hold unseen words at similarities from 0.32).
UNSEEN_MIN_CHUNKS = 500
UNSEEN_FULL_CHUNKS = 1000
#: ... and a question with such a word is low unless its best similarity reaches this
#: (fitted across folders, decision 0056, addendum: a question a large folder answers
#: reads close to its answer even when it uses a word the folder does not).
UNSEEN_SIMILARITY = 0.60
#: ... and, in a folder of any size, a question with such a word is low when its best
#: document leads the ``LEAD_RANK``-th by less than this (when the candidates hold that
#: many documents): it must stand out more than a question whose every word the folder
#: holds (decision 0056, ninth addendum: release notes' answerable questions lead by
#: 0.06-0.10, so the lead bar of every question cannot rise to catch the questions naming
#: a tool a small folder does not hold, which lead by 0.11-0.12; fitted across folders on
#: the grid 0, 0.10, 0.12, 0.13, 0.15).
UNSEEN_LEAD = 0.12
#: The test of the question's words in its nearest chunks starts in a folder of this many
#: chunks (decision 0056, fifth addendum: in the in-repo handbook's 114 chunks paraphrased
#: questions' words are held elsewhere, never in the answer) ...
NEAR_MIN_CHUNKS = 300
#: ... and its bar rises with the log of the folder's size to ``NEAR_SHARE`` at this many,
#: so that one added document moves it by a little, never across a step (sixth addendum:
#: the ramp's end on the grid 300, 600, 1,000, 2,000, fitted across folders).
NEAR_FULL_CHUNKS = 1000
#: ... low when the best of the ``NEAR_DEPTH`` nearest chunks holds less than this share of
#: the question's held words, weighed by rarity (fitted on 0.2, 0.25 and 0.3: 0.25, then
#: 0.2 in the refit on text headings and folder-read vectors, seventh addendum).
NEAR_SHARE = 0.2
#: How many chunks nearest by meaning (the vector leg's best) that test reads.
NEAR_DEPTH = 10
#: How many candidates of each leg, best first by the leg's own score, the evidence reads:
#: the same at every ``limit`` (a search's legs always fetch at least this many).
CONFIDENCE_DEPTH = 100


@dataclass(frozen=True, slots=True)
class Evidence:
    """What ``low_confidence`` is decided from, read from the first ``CONFIDENCE_DEPTH``
    candidates of each leg."""

    #: how many hits the response holds (0: nothing to answer from)
    hits: int
    #: the vector leg's cosine similarities, best first, one per document (its best
    #: chunk's; ``best_per_document``); None when the leg did not run
    similarities: tuple[float, ...] | None
    #: the lexical leg's best relevance (0 when it matched nothing); None when it did not run
    best_lexical: float | None
    #: the share of the query the embedding model reads
    readable: float
    #: how many of the query's terms no chunk of the index holds (``unseen_terms``), and
    #: how many chunks the index has; 0 and 0 when the keyword leg did not run
    unseen: int = 0
    chunks: int = 0
    #: the best share of the question's held words (by rarity) one of the ``NEAR_DEPTH``
    #: chunks nearest by meaning holds (``near_share``); None when not measured (no vector
    #: or keyword leg, or no word of the question held anywhere)
    near: float | None = None


def best_per_document(vector: Sequence[tuple[int, float]],
                      chunks: Mapping[int, StoredChunk]) -> list[float]:
    """The vector leg's similarities, best first, one per document (its best chunk's); a
    chunk ``chunks`` lacks counts as a document of its own."""
    seen: set[object] = set()
    out: list[float] = []
    for cid, sim in sorted(vector, key=lambda x: -x[1]):
        chunk = chunks.get(cid)
        key: object = chunk.document_path if chunk is not None else cid
        if key not in seen:
            seen.add(key)
            out.append(sim)
    return out


def unseen_terms(statistics: KeywordStatistics) -> int:
    """How many of the query's terms no chunk holds, by any of the keyword legs (a word,
    nor a substring of one, anywhere in the index)."""
    held: dict[str, int] = {}
    for (_, term), n in statistics.holding.items():
        held[term] = held.get(term, 0) + n
    return sum(1 for n in held.values() if n == 0)


@functools.lru_cache(maxsize=65536)
def _stem_of(word: str) -> str:
    """A word's stem as the keyword leg matches it (folded, then Porter's), remembered:
    the same words recur in every search's nearest chunks."""
    return stem(fold(word))


def _stems(text: str) -> frozenset[str]:
    return frozenset(_stem_of(text[a:b]) for a, b, cjk in word_pieces(text) if not cjk)


def near_share(statistics: KeywordStatistics, nearest: Sequence[StoredChunk]) -> float | None:
    """The best share, over ``nearest`` (the chunks nearest by meaning), of the question's
    terms the index holds that one chunk's title, heading trail or text holds, each term
    weighed ``log(1 + chunks / holding)`` (a rare word weighs most; a term's holding is the
    most any keyword leg counts). None when no term is held anywhere."""
    holding: dict[str, int] = {}
    for (_, term), n in statistics.holding.items():
        holding[term] = max(holding.get(term, 0), n)
    weights = {term: math.log(1.0 + statistics.chunks / n) for term, n in holding.items() if n}
    total = sum(weights.values())
    if not total:
        return None
    needs = {term: _stems(term) for term in weights}
    best = 0.0
    for chunk in nearest:
        held = _stems(" ".join((chunk.title, *chunk.heading_path, chunk.content)))
        share = sum(w for term, w in weights.items() if needs[term] and needs[term] <= held)
        best = max(best, share / total)
    return best


def size_ramp(chunks: float, top: float, start: float, full: float) -> float:
    """A bar that a folder's size raises smoothly: 0 up to ``start`` chunks, ``top`` from
    ``full``, and in between in proportion to the log of the size, so that a document of d
    chunks added to a folder of c moves it by about ``top`` × d / c / log(full / start),
    never across a step."""
    if chunks <= start:
        return 0.0
    return top * min(1.0, math.log(chunks / start) / math.log(full / start))


def near_bar(chunks: float, share: float = NEAR_SHARE, start: float = NEAR_MIN_CHUNKS,
             full: float = NEAR_FULL_CHUNKS) -> float:
    """The share of the question's held words under which its nearest chunks say "not
    here", in a folder of ``chunks`` chunks (``size_ramp``: 0 up to ``NEAR_MIN_CHUNKS``,
    ``NEAR_SHARE`` from ``NEAR_FULL_CHUNKS``; a document of d chunks added to a folder of
    c moves the shipped bar by about 0.2 × d / c). The fit passes its own."""
    return size_ramp(chunks, share, start, full)


def unseen_bar(chunks: float, similarity: float = UNSEEN_SIMILARITY,
               start: float = UNSEEN_MIN_CHUNKS, full: float = UNSEEN_FULL_CHUNKS) -> float:
    """The best similarity under which a question with a word no chunk holds is low, in a
    folder of ``chunks`` chunks (``size_ramp``: 0 up to ``UNSEEN_MIN_CHUNKS``,
    ``UNSEEN_SIMILARITY`` from ``UNSEEN_FULL_CHUNKS``; five chunks added anywhere move it
    by under 0.01). The fit passes its own."""
    return size_ramp(chunks, similarity, start, full)


def evidence(*, hits: int, vector: Sequence[tuple[int, float]] | None,
             chunks: Mapping[int, StoredChunk],
             lexical: Sequence[tuple[int, float]] | None, readable: float,
             statistics: KeywordStatistics | None = None) -> Evidence:
    """The evidence of one search: ``vector``, the vector leg's similarities (its first
    ``CONFIDENCE_DEPTH`` are read), and ``lexical``, the keyword leg's relevances as it
    returns them when asked for ``CONFIDENCE_DEPTH`` candidates (its own ranking, BM25,
    picks them; it re-orders them by coverage), each None when the leg did not run;
    ``chunks`` must hold the vector candidates' chunks (a missing one counts as a document
    of its own); ``statistics``, the index's counts of the query's terms (the keyword
    leg's, over the whole index), when the keyword leg ran."""
    sims = None
    top: list[tuple[int, float]] = []
    if vector is not None:
        top = sorted(vector, key=lambda x: -x[1])[:CONFIDENCE_DEPTH]
        sims = tuple(best_per_document(top, chunks))
    best = max((rel for _, rel in lexical), default=0.0) if lexical is not None else None
    if statistics is None:
        return Evidence(hits, sims, best, readable)
    nearest = [chunks[cid] for cid, _ in top[:NEAR_DEPTH] if cid in chunks]
    return Evidence(hits, sims, best, readable, unseen_terms(statistics), statistics.chunks,
                    near_share(statistics, nearest) if nearest else None)


def is_low(e: Evidence) -> bool:
    """The decision of the module docstring."""
    return low_confidence(hits=e.hits, similarities=e.similarities,
                          best_lexical=e.best_lexical, readable=e.readable,
                          unseen=e.unseen, chunks=e.chunks, near=e.near)


def low_confidence(*, hits: int, similarities: Sequence[float] | None,
                   best_lexical: float | None, readable: float, unseen: int = 0,
                   chunks: int = 0, near: float | None = None) -> bool:
    """The decision of the module docstring. ``similarities``: the vector leg's cosine
    similarities, best first, one per document (``best_per_document``; None when the leg
    did not run); ``best_lexical``: the lexical leg's best relevance (None when it did not
    run, 0 when it matched nothing); ``readable``: the share of the query the embedding
    model reads; ``unseen``: how many of the query's terms no chunk of the index (of
    ``chunks`` chunks) holds; ``near``: ``near_share`` of the nearest chunks."""
    if hits == 0:
        return True
    if best_lexical is not None and best_lexical >= MIN_LEXICAL:
        return False
    if similarities is None or readable < MIN_READABLE:
        return not best_lexical
    best = similarities[0] if similarities else 0.0
    if best_lexical is None:  # vector mode: no keyword evidence to rescue an answer
        return best < MIN_SIMILARITY  # the lead test alone flags 4 in 10 answerable ones
    lead_to = (similarities[LEAD_RANK - 1] if len(similarities) >= LEAD_RANK
               else FLOOR_SIMILARITY)
    if best < MIN_SIMILARITY or best - lead_to < MIN_LEAD:
        return True
    if unseen > 0 and len(similarities) >= LEAD_RANK and best - lead_to < UNSEEN_LEAD:
        return True
    if near is not None and near < near_bar(chunks):
        return True
    return unseen > 0 and best < unseen_bar(chunks)
