"""``benchmarks/span_misses.py``: each cited-span miss classified as the span inside the
right chunk, another section of the right document, or another document (decision 0056,
eighth addendum)."""

from __future__ import annotations

from benchmarks.span_misses import Hit, classify, ranks
from kbmcp_core.evaluation import Expected

ANSWER = (Expected("faq.txt", lines=(30, 34)),)


def test_each_miss_is_named_by_what_went_wrong() -> None:
    right = Hit("faq.txt", (20, 40), (28, 36))
    assert classify([right], ANSWER) == "hit"
    assert classify([Hit("faq.txt", (20, 40), (20, 26))], ANSWER) == "span"
    assert classify([Hit("faq.txt", (50, 70), (52, 60)), right], ANSWER) == "section"
    assert classify([Hit("other.txt", (1, 20), (1, 9)), right], ANSWER) == "document"
    assert classify([], ANSWER) == "document"
    # a hit without answer_lines cites its whole chunk
    assert classify([Hit("faq.txt", (20, 40), None)], ANSWER) == "hit"


def test_a_miss_says_where_the_right_document_and_chunk_were() -> None:
    hits = [Hit("other.txt", (1, 20), (1, 9)), Hit("faq.txt", (50, 70), (52, 60)),
            Hit("faq.txt", (20, 40), (28, 36))]
    assert ranks(hits, ANSWER) == (2, 3, False)
    assert ranks(hits[:1] + hits[2:], ANSWER) == (2, 2, True)
    assert ranks(hits[:1], ANSWER) == (None, None, False)
