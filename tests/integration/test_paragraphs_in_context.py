"""A chunk's paragraphs read in the context of the whole chunk, with the real default
model (``SpanEmbedder``, ``kbmcp_adapters/embedding/spans.py``, ``kbmcp_core/passages.py``;
decision 0028, addendum of session 11).

The help centre's "Accounts" section lost its question headings, so it holds four
answers; the third says how to get back in when the password is forgotten. The "Security"
section of the same page is about two-factor sign-in and passwords, and another page is
about signing in: both answer something else. The whole section's vector is a mix, so the
chunks' own vectors rank both above it; its paragraphs, pooled out of the one run the
section takes, put the answer first.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from kbmcp_adapters.app.bootstrap import bootstrap
from kbmcp_adapters.app.collections import open_collections
from kbmcp_adapters.app.config import build_settings
from kbmcp_adapters.app.knowledge_base import KnowledgeBase
from kbmcp_adapters.app.search_collections import search_collections
from kbmcp_adapters.embedding.fastembed_embedder import PACKAGED_MODEL_ID, FastEmbedEmbedder
from kbmcp_core.joint_search import Part, joint_view
from kbmcp_core.models import Vector, whole_text_of
from kbmcp_core.passages import cosine, paragraph_groups, paragraphs_of
from kbmcp_core.ports import SpanEmbedder, SpanGroup
from kbmcp_core.search import SearchResponse
from tests.collections_support import TWO_COLLECTIONS
from tests.conftest import write_files
from tests.hashing_embedder import HashingEmbedder

ACCOUNTS = """You stay signed in for thirty days on a trusted device; sign out from the account menu
to end every session at once, for example after using a shared computer.

Your storage quota depends on the plan: the free plan holds 5 GB, the team plan 100 GB
per seat. Files in the trash count towards the quota until the trash is emptied.

Cannot remember your password and locked out? Open the sign-in page, choose
"Send reset link" and follow the link we e-mail you; it stays valid for one hour.

To close your account, export your files first, then choose "Delete account" in the
settings; the data is erased after a grace period of fourteen days.
"""
FAQ = f"""# Help centre

## Accounts

{ACCOUNTS}
## Security

Two-factor sign-in is recommended for every account and required for administrators:
after the password, the sign-in page asks for the code of your authenticator app. New
passwords must be at least twelve characters long and may not repeat a recent one.

## Billing

Invoices are issued on the first day of each month and sent to the billing contact.
You can download past invoices as PDF from the billing page.

Refunds for unused seats are credited to the next invoice, never paid out in cash.
"""
SIGNING_IN = """# Signing in

Sign in with your e-mail address and password, or with your company's single sign-on
if your administrator has set it up. A new device asks for the code of your
authenticator app the first time you sign in from it, and the browser remembers the
device for thirty days.
"""
FILES = {"faq.md": FAQ, "signing-in.md": SIGNING_IN}
QUESTION = "how can I get back into my account when I cannot remember my password"
#: the answer's paragraph, the third of "Accounts"
ANSWER = 2
TRAIL = ("Help centre", "Accounts")


def places(response: SearchResponse) -> list[tuple[str, str]]:
    return [(h.path, h.heading) for h in response.results]


# -- the embedder: parts pooled out of one run -------------------------------------------

def test_one_group_over_the_whole_text_is_the_texts_own_vector(
        embedder: FastEmbedEmbedder) -> None:
    assert embedder.model_id == PACKAGED_MODEL_ID
    texts = [paragraph_groups(TRAIL, ACCOUNTS)[0], SIGNING_IN, "Refunds are credited."]
    read = embedder.embed_spans([(t, [[(0, len(t))]]) for t in texts])
    assert read is not None
    for text, own, (whole,) in zip(texts, embedder.embed_documents(texts), read,
                                   strict=True):
        assert whole is not None
        assert cosine(whole, own) >= 0.9999, text


def test_a_paragraph_read_in_context_is_nearer_its_question_than_the_whole_chunk(
        embedder: FastEmbedEmbedder) -> None:
    text, groups = paragraph_groups(TRAIL, ACCOUNTS)
    assert len(groups) == 4 and text[slice(*groups[ANSWER][-1])].startswith("Cannot remember")
    read = embedder.embed_spans([(text, groups)])
    assert read is not None
    parts = read[0]
    whole = embedder.embed_documents([text])[0]
    question = embedder.embed_query(QUESTION)
    assert all(p is not None for p in parts)
    answer = parts[ANSWER]
    assert answer is not None
    assert cosine(answer, whole) < 0.99  # a vector of its own, not the chunk's again
    near = [cosine(question, p) for p in parts if p is not None]
    assert cosine(question, answer) > cosine(question, whole) + 0.05
    assert max(near) == near[ANSWER]  # and the nearest of the four


def test_a_part_past_the_models_window_has_no_vector(embedder: FastEmbedEmbedder) -> None:
    opening = "Quotas and plans, one paragraph at a time."
    filler = " ".join(f"Plan {i} holds {i * 5} GB of files for each seat." for i in range(40))
    last = "Refunds for unused seats are credited to the next invoice."
    text = f"{opening}\n\n{filler}\n\n{last}"
    assert embedder.count_tokens([text])[0] > embedder.max_tokens == 256
    start = len(text) - len(last)
    read = embedder.embed_spans([(text, [[(0, len(opening))], [(start, len(text))],
                                         [(0, len(opening)), (start, len(text))]])])
    assert read is not None
    first, past, past_with_context = read[0]
    assert first is not None
    assert past is None and past_with_context is None


def model_runs(embedder: FastEmbedEmbedder, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The texts the embedder's loaded MiniLM runner runs from now on (its ``hidden``)."""
    inner: Any = embedder._pool_model
    runs: list[str] = []
    real = inner.hidden

    def counted(texts: Sequence[str], **kwargs: Any) -> Any:
        runs.extend(texts)
        return real(texts, **kwargs)

    monkeypatch.setattr(inner, "hidden", counted)
    return runs


def test_the_same_parts_asked_again_do_not_run_the_model(
        embedder: FastEmbedEmbedder, monkeypatch: pytest.MonkeyPatch) -> None:
    embedder.embed_spans([("Loads the model.", [[(0, 5)]])])
    runs = model_runs(embedder, monkeypatch)
    # texts of this test only: the session's embedder remembers what other tests read
    texts = [f"{paragraph_groups(TRAIL, ACCOUNTS)[0]}\n\nAsked by the memory test {i}."
             for i in range(3)]
    items: list[tuple[str, Sequence[SpanGroup]]] = [(t, [[(0, 10)], [(12, 40)]]) for t in texts]
    first = embedder.embed_spans(items)
    assert sorted(runs) == sorted(texts)  # one run per text
    runs.clear()
    again = embedder.embed_spans(items)
    assert runs == [] and again == first  # nothing run, the same vectors
    other = embedder.embed_spans([(texts[0], [[(0, 10)]])])  # the same text, other parts
    assert runs == [texts[0]] and other is not None and first is not None
    assert other[0][0] == pytest.approx(first[0][0])


def test_a_query_asked_again_does_not_run_the_model(
        model_cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # the product's embedder, not the session's (which remembers every text for speed)
    embedder = FastEmbedEmbedder(PACKAGED_MODEL_ID, cache_dir=model_cache)
    embedder.embed_query("Loads the model.")
    runs = model_runs(embedder, monkeypatch)
    question = f"{QUESTION}, asked by the query memory test"
    first = embedder.embed_query(question)
    assert runs == [question]
    first[0] += 1.0  # a caller's change to its copy is its own
    again = embedder.embed_query(question)
    assert runs == [question]  # nothing run the second time
    assert again == embedder.embed_documents([question])[0]  # the model's own vector
    assert again[0] != first[0]


def test_parts_read_lately_are_answered_without_starting_a_thread(
        embedder: FastEmbedEmbedder, monkeypatch: pytest.MonkeyPatch) -> None:
    """A search whose candidates were all read lately (fifty clients asking the same
    questions) starts no thread pool; one text not remembered among them is run alone,
    and every answer is the one the first reading gave (decision 0057, session 16)."""
    from concurrent.futures import ThreadPoolExecutor

    from kbmcp_adapters.embedding import fastembed_embedder

    pools: list[int] = []
    real_pool = ThreadPoolExecutor

    def counted(workers: int, **kwargs: Any) -> Any:
        pools.append(workers)
        return real_pool(workers, **kwargs)

    texts = [f"{paragraph_groups(TRAIL, ACCOUNTS)[0]}\n\nAsked by the pool test {i}."
             for i in range(4)]
    items: list[tuple[str, Sequence[SpanGroup]]] = [(t, [[(0, 10)], [(12, 40)]]) for t in texts]
    first = embedder.embed_spans(items[:3])
    monkeypatch.setattr(fastembed_embedder, "ThreadPoolExecutor", counted)
    again = embedder.embed_spans(items[:3])
    assert pools == [] and again == first
    mixed = embedder.embed_spans([items[3], *items[:3]])
    assert pools == [] and mixed is not None and mixed[1:] == first  # one text: no pool
    alone = embedder.embed_spans([items[3]])
    assert alone is not None and alone[0] == mixed[0]


# -- end to end: KnowledgeBase.search ------------------------------------------------------

@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("in-context") / "help"
    write_files(root, FILES)
    return root


def _open(folder: Path, embedder: Any, config: str | None = None) -> KnowledgeBase:
    """A knowledge base on ``folder`` with the default configuration, or with ``config``
    (the ``[search]`` table a user would write) in a file beside the folder."""
    path = None
    if config is not None:
        path = folder.parent / "settings.toml"
        path.write_text(config, encoding="utf-8")
    return KnowledgeBase(bootstrap(build_settings(path, cwd=folder, kb_path=folder),
                                   embedder=embedder))


@pytest.fixture(scope="module")
def kb(folder: Path, embedder: FastEmbedEmbedder) -> Iterator[KnowledgeBase]:
    kb = _open(folder, embedder)
    try:
        assert kb.index().failed == 0
        yield kb
    finally:
        kb.close()


@pytest.fixture(scope="module")
def kb_off(kb: KnowledgeBase, folder: Path,
           embedder: FastEmbedEmbedder) -> Iterator[KnowledgeBase]:
    """The same index, searched with ``[search] passage_candidates = 0``."""
    off = _open(folder, embedder, "[search]\npassage_candidates = 0\n")
    try:
        yield off
    finally:
        off.close()


def test_the_chunk_whose_later_paragraph_answers_comes_first_by_default(
        kb: KnowledgeBase, kb_off: KnowledgeBase) -> None:
    assert kb.settings.search_passage_candidates is None  # nothing configured
    assert kb_off.settings.search_passage_candidates == 0
    assert places(kb.search(QUESTION, limit=3))[0] == ("faq.md", "Accounts")
    # the chunks' own vectors put both sections that answer something else above it
    off = places(kb_off.search(QUESTION, limit=4))
    assert off.index(("faq.md", "Accounts")) == 2, off
    assert set(off[:2]) == {("signing-in.md", "Signing in"), ("faq.md", "Security")}


# -- an embedder that cannot read parts: nothing extra unless asked -------------------------

class CountingEmbedder(HashingEmbedder):
    """The hashing stand-in, counting the texts embedded as documents."""

    def __init__(self) -> None:
        super().__init__(dimension=32, max_tokens=512)
        self.documents: list[str] = []

    def embed_documents(self, texts: Sequence[str]) -> list[Vector]:
        self.documents.extend(texts)
        return super().embed_documents(texts)


@pytest.mark.parametrize("config", [None, "[search]\npassage_candidates = 3\n"],
                         ids=["default", "passage_candidates=3"])
def test_an_embedder_that_cannot_read_parts_embeds_paragraphs_only_when_asked(
        tmp_path: Path, config: str | None) -> None:
    folder = tmp_path / "help"
    write_files(folder, FILES)
    counting = CountingEmbedder()
    assert not isinstance(counting, SpanEmbedder)
    kb = _open(folder, counting, config)
    try:
        assert kb.index().failed == 0
        counting.documents.clear()
        hits = kb.search(QUESTION, limit=4).results
        assert hits
        if config is None:
            assert counting.documents == []  # the default costs one query embedding
            return
        # the old route: each multi-paragraph candidate's paragraphs, one text each
        chunks = kb.searcher().store.get_chunks([h.chunk_id for h in hits])
        expected = {whole_text_of(c.heading_path, p) for c in chunks.values()
                    for p in paragraphs_of(c.content)
                    if len(paragraphs_of(c.content)) >= 2}
        assert expected and set(counting.documents) <= expected
        assert any(d.endswith("valid for one hour.") for d in counting.documents)
    finally:
        kb.close()


# -- collections: parts are read only when one model serves them all ----------------------

@pytest.fixture
def team(tmp_path: Path) -> Path:
    root = tmp_path / "team"
    write_files(root / "alpha", {"faq.md": FAQ})
    write_files(root / "beta", {"signing-in.md": SIGNING_IN})
    (root / "kb-mcp.toml").write_text(TWO_COLLECTIONS, encoding="utf-8")
    return root


class SpanSpy:
    """Records what ``embed_spans`` of an embedder is asked and answers."""

    def __init__(self, embedder: FastEmbedEmbedder, monkeypatch: pytest.MonkeyPatch) -> None:
        self.asked: list[str] = []
        self.answered: list[Any] = []
        real = embedder.embed_spans

        def spy(items: Sequence[tuple[str, Sequence[SpanGroup]]]) -> Any:
            self.asked += [text for text, _ in items]
            got = real(items)
            self.answered.append(got)
            return got

        monkeypatch.setattr(embedder, "embed_spans", spy)


def test_collections_sharing_one_model_read_paragraphs_in_context(
        team: Path, embedder: FastEmbedEmbedder, monkeypatch: pytest.MonkeyPatch) -> None:
    opened = open_collections(build_settings(team / "kb-mcp.toml", user_config=False, env={}),
                              embedder=embedder)
    try:
        kbs = {name: opened.kb(name) for name in opened.names}
        for kb in kbs.values():
            assert kb.index().failed == 0
        spy = SpanSpy(embedder, monkeypatch)
        got = search_collections(kbs, QUESTION, limit=4)
        assert [(h.collection, h.path, h.heading) for h in got.results][0] == (
            "alpha", "faq.md", "Accounts")
        assert any(t.startswith("Help centre > Accounts\n") for t in spy.asked)
        assert spy.answered and all(a is not None for a in spy.answered)
    finally:
        opened.close()


def test_collections_with_two_models_read_no_parts_and_still_answer(
        team: Path, embedder: FastEmbedEmbedder, monkeypatch: pytest.MonkeyPatch) -> None:
    kbs: dict[str, KnowledgeBase] = {}
    try:
        for name, model in (("alpha", embedder), ("beta", HashingEmbedder("hash", 32))):
            kbs[name] = _open(team / name, model)
            assert kbs[name].index().failed == 0
        searchers = {n: kb.searcher() for n, kb in kbs.items()}
        with joint_view([Part(n, s.store, s.vectors, s.embedder, s.rules,
                              s.embedder.model_id) for n, s in searchers.items()]) as view:
            joint = view.embedder
        items = [paragraph_groups(TRAIL, ACCOUNTS)]
        assert joint.embed_spans(items) is None  # the first collection's model could
        assert embedder.embed_spans(items) is not None
        spy = SpanSpy(embedder, monkeypatch)
        got = search_collections(kbs, QUESTION, limit=4)
        assert {h.collection for h in got.results} == {"alpha", "beta"}
        assert spy.asked == []
    finally:
        for kb in kbs.values():
            kb.close()
