"""Releasing the embedding model after an index run (decision 0045, session-10 addendum):
the real model's sessions are freed and made again on the next call with the same vectors,
and a knowledge base releases its model only when the caller asks (``kb-mcp index``)."""

from __future__ import annotations

import gc
import weakref
from pathlib import Path

from kbmcp_adapters.app.bootstrap import bootstrap
from kbmcp_adapters.app.config import build_settings
from kbmcp_adapters.app.knowledge_base import KnowledgeBase
from kbmcp_adapters.app.model_release import release_model
from kbmcp_adapters.embedding.fastembed_embedder import FastEmbedEmbedder
from tests.conftest import write_files
from tests.hashing_embedder import HashingEmbedder

#: the packaged MiniLM file: documents one text per run on a one-thread session, queries
#: on a session of their own (both are released)
PACKAGED = "kb-mcp/all-MiniLM-L6-v2-int8"
TEXTS = ["Signing keys rotate every ninety days.", "The backup runs at night. " * 40,
         "Wie spät ist es?", "short"]


def test_a_released_model_is_freed_and_made_again_with_the_same_vectors(
        model_cache: Path) -> None:
    embedder = FastEmbedEmbedder(PACKAGED, cache_dir=model_cache)
    documents = embedder.embed_documents(TEXTS)
    query = embedder.embed_query("when do keys rotate")
    loaded = [s for s in (embedder._pool_model, embedder._model) if s is not None]  # noqa: SLF001
    assert loaded, "embedding loaded a model"
    sessions = [weakref.ref(s) for s in loaded]
    del loaded

    assert release_model(embedder)
    gc.collect()
    assert all(ref() is None for ref in sessions)  # nothing else holds them

    assert embedder.embed_documents(TEXTS) == documents  # bit for bit
    assert embedder.embed_query("when do keys rotate") == query
    assert not release_model(object())  # an embedder without a model: nothing to drop


class Counting(HashingEmbedder):
    def __init__(self) -> None:
        super().__init__(dimension=32)
        self.released = 0

    def release(self) -> None:
        self.released += 1


def test_a_knowledge_base_releases_its_model_only_when_asked(tmp_path: Path) -> None:
    root = tmp_path / "kb"
    write_files(root, {f"n{i}.md": f"# Note {i}\n\nnote {i} on key rotation\n"
                       for i in range(5)})
    embedder = Counting()
    kb = KnowledgeBase(bootstrap(build_settings(None, cwd=root, kb_path=root),
                                 embedder=embedder))
    try:
        kb.index()  # serve and watch: the model stays for the next run
        assert embedder.released == 0
        write_files(root, {"n9.md": "# Note 9\n\nnote 9 on backups\n"})
        summary = kb.index(release_model=True)
        assert summary.chunks_embedded == 1 and embedder.released == 1
        hits = kb.search("note 9 backups", mode="vector", limit=1).results
        assert [h.path for h in hits] == ["n9.md"]  # the query embeds after the release
    finally:
        kb.close()
