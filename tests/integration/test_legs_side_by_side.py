"""A hybrid search runs its two legs at once (decision 0058) and answers exactly as when
they run one after the other: same hits, same order, same scores."""

from __future__ import annotations

import shutil
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from kbmcp_adapters.app.bootstrap import bootstrap
from kbmcp_adapters.app.config import build_settings
from kbmcp_adapters.app.knowledge_base import KnowledgeBase
from kbmcp_adapters.app.side_by_side import ThreadedLegs
from kbmcp_core.search import Searcher
from kbmcp_core.search_legs import InTurn
from kbmcp_core.search_request import SearchRequest
from tests.hashing_embedder import HashingEmbedder

EVAL_KB = Path(__file__).parent.parent / "fixtures" / "eval-kb"
QUERIES = ("how do I rotate the signing keys", "backup schedule", "deploy rollback steps",
           "what is the retention policy", "onboarding checklist")


@pytest.fixture(scope="module")
def indexed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KnowledgeBase]:
    root = tmp_path_factory.mktemp("side-by-side") / "kb"
    shutil.copytree(EVAL_KB, root)
    kb = KnowledgeBase(bootstrap(build_settings(None, cwd=root, kb_path=root),
                                 embedder=HashingEmbedder(dimension=32)))
    kb.index()
    yield kb
    kb.close()


def _answers(searcher: Searcher, **filters: object) -> list[list[tuple[str, int, float]]]:
    return [[(h.path, h.chunk_id, h.score)
             for h in searcher.search(SearchRequest.of(q, limit=8, **filters)).results]
            for q in QUERIES]


def test_the_legs_side_by_side_answer_as_in_turn(indexed: KnowledgeBase) -> None:
    searcher = indexed.searcher(embeds=True)
    assert isinstance(searcher.beside, ThreadedLegs)  # what the knowledge base runs
    side_by_side = _answers(searcher)
    searcher.beside = InTurn()
    in_turn = _answers(searcher)
    assert side_by_side == in_turn
    assert all(side_by_side)  # every query found something


def test_a_filtered_search_side_by_side_answers_as_in_turn(indexed: KnowledgeBase) -> None:
    searcher = indexed.searcher(embeds=True)
    side_by_side = _answers(searcher, path_globs=["*.md"])
    searcher.beside = InTurn()
    assert side_by_side == _answers(searcher, path_globs=["*.md"])


def test_the_first_leg_runs_while_the_second_does() -> None:
    """The first call waits for a sign from the second: in turn it would never get it."""
    legs = ThreadedLegs()
    signal = threading.Event()
    try:
        first, second = legs.both(lambda: signal.wait(timeout=30), signal.set)
    finally:
        legs.close()
    assert first is True
    assert second is None


def test_a_failing_leg_is_raised_after_the_other_ended() -> None:
    legs = ThreadedLegs()
    ended = threading.Event()

    def failing() -> None:
        raise ValueError("keyword leg broke")

    try:
        with pytest.raises(ValueError, match="keyword leg broke"):
            legs.both(failing, ended.set)
    finally:
        legs.close()
    assert ended.is_set()


def test_with_every_worker_busy_or_closed_the_legs_run_in_turn() -> None:
    legs = ThreadedLegs(workers=1)
    release, inside = threading.Event(), threading.Event()

    def hold() -> str:
        inside.set()
        release.wait(timeout=30)
        return threading.current_thread().name

    holder = threading.Thread(target=lambda: legs.both(hold, lambda: None))
    holder.start()
    try:
        assert inside.wait(timeout=30)
        here = threading.current_thread().name
        # the one worker is held: this search's first leg runs on its own thread
        assert legs.both(lambda: threading.current_thread().name, lambda: 1) == (here, 1)
    finally:
        release.set()
        holder.join(timeout=30)
    legs.close()
    assert legs.both(lambda: threading.current_thread().name, lambda: 2) == (here, 2)
