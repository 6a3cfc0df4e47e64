"""``low_confidence``: does a search response hold a clear answer, or should the client say
it found none?

Search always returns its best candidates, even for a question the knowledge base has
nothing on; the flag tells an agent to say "not found" instead of answering from them. It
is decided from the two legs' best scores (decision 0028, calibrated on no-answer question
sets beside answerable ones on every dev set):

* **keywords matched clearly** (the best lexical relevance, the share of the query's
  weight one chunk holds, is at least ``MIN_LEXICAL``): not low;
* else, when the model **can read** the query (at least half of it, ``coverage``): low
  when its best cosine similarity is below ``MIN_SIMILARITY`` (nothing is about the
  question, in words or in meaning) or stands less than ``MIN_LEAD`` above the tenth best
  document's (nothing in particular is: in a large corpus some page is always loosely near
  a question it does not answer, and so are nine others). Documents, not chunks: a long
  document that answers has many chunks near the question, all about its subject, and
  counted as chunks they hid the lead its answer has over the rest of the folder
  (decision 0028, addendum of session 11);
* when the model cannot read the query (Japanese for an English model) or did not run
  (``lexical`` mode), only keywords can judge: low when nothing matched at all;
* in ``vector`` mode (no keywords at all) only the best similarity counts: without
  keyword evidence the lead test flags four in ten answerable questions.

An empty result is always low.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from kbmcp_core.models import StoredChunk

#: Below this cosine similarity the best semantic match is about something else (decision
#: 0028: most questions about software a corpus does not cover score under it on small
#: corpora; answerable questions rarely do).
MIN_SIMILARITY = 0.33
#: ... and a best match leading the tenth best document by less than this stands out from
#: nothing (a large corpus: unanswerable questions still find pages at 0.4-0.6).
MIN_LEAD = 0.15
#: The rank (among documents, each by its best chunk) whose similarity the best must lead.
LEAD_RANK = 10
#: At or above this lexical relevance (0–1) the words of the query clearly occur in a chunk.
MIN_LEXICAL = 0.20
#: The share of a query the model must read for its similarity to count.
MIN_READABLE = 0.5


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


def low_confidence(*, hits: int, similarities: Sequence[float] | None,
                   best_lexical: float | None, readable: float) -> bool:
    """The decision of the module docstring. ``similarities``: the vector leg's cosine
    similarities, best first, one per document (``best_per_document``; None when the leg
    did not run); ``best_lexical``: the lexical
    leg's best relevance (None when it did not run, 0 when it matched nothing);
    ``readable``: the share of the query the embedding model reads."""
    if hits == 0:
        return True
    if best_lexical is not None and best_lexical >= MIN_LEXICAL:
        return False
    if similarities is None or readable < MIN_READABLE:
        return not best_lexical
    best = similarities[0] if similarities else 0.0
    if best_lexical is None:  # vector mode: no keyword evidence to rescue an answer
        return best < MIN_SIMILARITY  # the lead test alone flags 4 in 10 answerable ones
    tenth = similarities[LEAD_RANK - 1] if len(similarities) >= LEAD_RANK else 0.0
    return best < MIN_SIMILARITY or best - tenth < MIN_LEAD
