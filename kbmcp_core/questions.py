"""Question-shaped queries lean on the vector leg (decision 0028, addendum of session 8).

A natural question — "how do I stop the login page coming back", "can I use Django
without a database", "what is a bare repository" — is asked in the asker's words, and the
answer is written in the author's: the few words the two share are often not the ones
that matter, while the model compares meanings. Measured on the natural-question set
(``dev-eval/faq``), the vector leg alone already had the better section recall; the
keyword-weighted fusion of decision 0015 pulled the right section down below a
neighbour that shared more words.

So a query that is shaped like an English question (it opens with a question word —
*how, what, why, which, who, where* — or with an auxiliary followed by its subject — *can
I, do we, is there, should the* — or ends with ``?``) is fused one step lower on the
lexical side: its lexical weight slides from 0 (no word matched) to what an unmatched
query gets by default (``lexical_weight_min``), instead of from ``lexical_weight_min`` to
``lexical_weight``. A query naming something (``OTM-4471``, ``tar xzf``, a heading) is
not a question and is fused as before. A fixed lexical weight and reciprocal rank fusion
(``rrf``) are left alone.
"""

from __future__ import annotations

import re
from dataclasses import replace

from kbmcp_core.fusion import Fusion

_WH = "how|what|what's|why|which|who|who's|whom|whose|where"
_AUX = "can|could|should|shall|do|does|did|is|are|was|were|will|would|may|might|must|have|has"
_SUBJECT = ("i|you|we|they|it|he|she|there|this|that|these|those|my|your|our|their|its"
            "|the|a|an|any|anyone|someone|one")
#: A question word first, or an auxiliary (possibly negated: ``can't``) and then a subject.
_QUESTION = re.compile(
    rf"^\W*(?:(?:{_WH})\b|(?:{_AUX})(?:n?['’]t)?\s+(?:{_SUBJECT})\b)", re.IGNORECASE)


def is_question(query: str) -> bool:
    """Whether ``query`` is shaped like an English question (the module docstring).
    "do nothing, successfully" and "When you first install React" are not; "do I need
    a key", "Which sites use Django" and "vacation carry-over?" are."""
    return bool(_QUESTION.match(query)) or query.rstrip().endswith("?")


def fusion_for(query: str, fusion: Fusion) -> Fusion:
    """The fusion to rank ``query`` with: ``fusion`` itself, or, for a question under a
    sliding ``weighted`` fusion, its slide moved one step down (0 → ``lexical_weight_min``).
    A fixed weight (``lexical_weight_min`` ≥ ``lexical_weight``) is a choice made on
    purpose and stays as set, questions included."""
    if (fusion.method != "weighted" or fusion.lexical_weight_min >= fusion.lexical_weight
            or not is_question(query)):
        return fusion
    return replace(fusion, lexical_weight=fusion.lexical_weight_min, lexical_weight_min=0.0)
