"""``answer_lines``: each hit cites the lines of its chunk that answer the query, not the
whole chunk (decision 0056); eval measures how often the first hit's span holds the answer."""

from __future__ import annotations

from dataclasses import replace

from kbmcp_core.answer_lines import MAX_LINES, answer_span, blocks_of, chunk_answer
from kbmcp_core.evaluation import Expected, GoldenQuery, Ranked, Retrieved, evaluate
from kbmcp_core.models import StoredChunk
from kbmcp_core.spans import query_terms

FAQ = "\n".join([
    "Django is released under the BSD licence and free to use.",  # line 11
    "Anyone may build on it for any purpose.",
    "",
    "Our logo may appear in talks and slides about the framework.",
    "Ask the foundation before you print it on goods you sell.",
    "",
    "To cite the project in a paper, name the Django Software",
    "Foundation as its author and give the release you used.",
    "The year is that of the release.",
    "",
    "Security reports go to the security team by e-mail,",
    "never to the public tracker; they answer within a week.",
    "Fixes are announced on the blog and the mailing list.",
    "",
    "Releases follow a fixed schedule of roughly eight months.",
    "Each feature release is supported for about sixteen months.",
    "",
    "Long-term support releases come every two years.",
    "They receive security fixes for three years.",
    "",
    "Translations are done on Transifex by volunteers.",
    "Anyone may join a language team there.",
])  # lines 11-32


def span(query: str, content: str = FAQ, start: int = 10, end: int = 32) -> tuple[int, int]:
    got = answer_span(content, start, end, query_terms(query))
    assert got is not None
    return got


def test_the_span_is_the_paragraph_that_answers_with_its_neighbours() -> None:
    first, last = span("how do I cite django in a paper")
    assert first <= 17 and last >= 19  # the answer: lines 17-19
    assert 10 <= first <= last <= 32 and last - first + 1 < 23  # inside, and smaller
    first, last = span("where do I report a security problem")
    assert first <= 21 and last >= 22


def test_the_last_line_of_the_text_is_the_end_line() -> None:
    # the chunk's range opens with its heading and a blank line: the text starts after
    text = "Intro line.\n\nTo reset a password, run:\n\n```\nkb reset --user x\n```"
    assert answer_span(text, 1, 9, query_terms("reset a password")) == (3, 9)


def test_a_lead_in_brings_its_example_and_a_title_its_paragraph() -> None:
    text = "Some words.\n\nUpgrade pip by running:\n\n```\npip install -U pip\n```"
    blocks = blocks_of(text)
    assert [(b.first, b.last, b.code) for b in blocks] == [
        (0, 0, False), (2, 2, False), (4, 6, True)]
    first, last = answer_span(text, 100, 106, query_terms("upgrade pip")) or (0, 0)
    assert first <= 102 and last == 106  # the sentence and its command (and a neighbour)
    titled = " Debugging tests\n ~~~~~~~~~~~~~~~\n\n Run ./run.sh blkid to run one test."
    assert [b.code for b in blocks_of(titled)] == [False, False]  # a rule is not a fence


def test_nothing_to_go_on_cites_the_whole_chunk_and_a_span_is_bounded() -> None:
    assert span("quantum chromodynamics") == (10, 32)
    long = "\n".join(f"word {i} release schedule" for i in range(60))
    first, last = span("release schedule", long, 1, 60)
    assert last - first + 1 <= MAX_LINES


def test_a_stored_chunk_is_cited_by_its_answer_lines() -> None:
    chunk = StoredChunk(id=1, document_path="faq.md", title="FAQ", heading="FAQ",
                        heading_path=("FAQ",), content=FAQ, start_line=9, end_line=32,
                        page=None, tags=(), date=None, topic=None, category=None)
    got = chunk_answer(chunk, query_terms("how do I cite django in a paper"))
    assert got is not None and got[0] <= 17 and got[1] >= 19 and got != (9, 32)
    page = replace(chunk, start_line=None, end_line=None, page=3)
    assert chunk_answer(page, query_terms("cite django")) is None  # a PDF page: no lines


def test_eval_says_how_often_the_first_hits_span_holds_the_answer() -> None:
    queries = [GoldenQuery("a", "cite", (Expected("faq.md", lines=(17, 19)),)),
               GoldenQuery("b", "logo", (Expected("faq.md", lines=(14, 15)),))]
    hits = {"cite": [Ranked("faq.md", "", 10, 32, (16, 20))],
            "logo": [Ranked("faq.md", "", 10, 32, (21, 25))]}
    report = evaluate("hybrid", queries, lambda q: Retrieved(hits[q]), lambda h: h)
    assert report.cited is not None
    assert report.cited.as_dict() == {
        "queries": 2, "first_hit_span_holds_answer": 0.5,
        "first_hit_chunk_holds_answer": 1.0, "median_span_lines": 5.0,
        "median_chunk_lines": 23.0}
