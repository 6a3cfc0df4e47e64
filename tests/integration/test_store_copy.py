"""``migrate_store``: an index copied to another store (SQLite file or PostgreSQL) and another
vector location answers as the original did, and nothing is embedded on the way."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from kbmcp_adapters.app.bootstrap import Container, bootstrap
from kbmcp_adapters.app.config import build_settings
from kbmcp_adapters.app.knowledge_base import KnowledgeBase
from kbmcp_adapters.app.migrate_store import migrate_store
from kbmcp_adapters.embedding.fastembed_embedder import PACKAGED_MODEL_ID, FastEmbedEmbedder
from kbmcp_adapters.store.sql_store import SqlIndexStore
from kbmcp_core import index_copy
from kbmcp_core.errors import ConfigError, IndexNotFound, ModelMismatch
from kbmcp_core.index_copy import CopyReport
from kbmcp_core.meta_keys import (
    META_COPY,
    META_DIMENSION,
    META_EMBED_TEXT,
    META_IN_PROGRESS,
    META_MODEL,
    META_VECTORS,
)
from kbmcp_core.models import EMBED_TEXT, Vector
from kbmcp_core.settings import Settings
from tests.conftest import write_files
from tests.s3_server import S3Server

REPEATED = "## Checklist\n\nConfirm the backup finished and the alert is quiet.\n"

CORPUS: dict[str, str | bytes] = {
    "ops/rotation.md": "---\ntitle: Key rotation\ntags: [security, ops]\ndate: 2026-02-01\n"
                       "---\n# Rotating keys\n\nRotate the signing keys every ninety days and "
                       "revoke the old ones after a grace period.\n\n## Emergency\n\nIf a key "
                       "leaks, revoke it at once and page the security on-call.\n",
    "ops/backups.md": "# Backups\n\nNightly snapshots of the database are kept for thirty "
                      "days in cold storage.\n\n" + REPEATED + "\n## Restore\n\nRestoring "
                      "takes about an hour per terabyte.\n\n" + REPEATED,
    "garden/tomatoes.md": "# Tomatoes\n\nTomato seedlings want warmth and plenty of light "
                          "before they go outside.\n",
    "garden/compost.md": "# Compost\n\nA compost heap needs greens, browns, air and "
                         "moisture to break down quickly.\n",
    "cooking/bread.md": "# Sourdough\n\nFeed the starter the night before and let the dough "
                        "rise slowly in a cool kitchen.\n",
    "handbook/leave.md": "# Leave\n\nAsk your manager for leave at least two weeks ahead; "
                         "the calendar shows who is away.\n",
    "handbook/日本語.md": "# 休暇\n\n休暇の申請は二週間前までに上長へ提出してください。\n",
}

QUERIES = ("how often should signing keys be rotated", "how long are database snapshots kept",
           "what do tomato seedlings need", "sourdough starter", "休暇の申請",
           "who is away on leave")


class NeverEmbeds:
    """The embedder port, for a copy: it knows its model and refuses to embed anything."""

    def __init__(self, model_id: str, dimension: int, max_tokens: int = 256) -> None:
        self.model_id = model_id
        self.dimension = dimension
        self.max_tokens = max_tokens

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        raise AssertionError("the copy asked the embedder to count tokens")

    def coverage(self, text: str) -> float:
        raise AssertionError("the copy asked the embedder for coverage")

    def embed_documents(self, texts: Sequence[str]) -> list[Vector]:
        raise AssertionError(f"the copy embedded {len(texts)} texts")

    def embed_query(self, text: str) -> Vector:
        raise AssertionError("the copy embedded a query")


def settings(kb: Path, **values: Any) -> Settings:
    """Every section its own chunk (tiny ones are not merged), so documents have several;
    the model is the shared test embedder's (the packaged file) unless a test names one."""
    values.setdefault("embedding_model", PACKAGED_MODEL_ID)
    return build_settings(None, cwd=kb, kb_path=kb, chunk_min_tokens=1, **values)


def sqlite_url(path: Path) -> str:
    return f"sqlite:///{path}"


@pytest.fixture
def source_kb(tmp_path: Path, embedder: FastEmbedEmbedder) -> Iterator[Path]:
    """A knowledge base indexed with the real model in its default index folder."""
    root = tmp_path / "kb"
    write_files(root, CORPUS)
    kb = KnowledgeBase(bootstrap(settings(root), embedder=embedder))
    assert kb.index().added == len(CORPUS)
    kb.close()
    yield root


Opened = list[Container]


@pytest.fixture
def opened() -> Iterator[Opened]:
    containers: Opened = []
    yield containers
    for c in containers:
        c.close()


def copy(opened: Opened, source: Settings, target: Settings, *, model: str | None = None,
         dimension: int = 384, **kwargs: Any) -> CopyReport:
    never = NeverEmbeds(model or source.embedding_model, dimension)
    src, dst = bootstrap(source, embedder=never), bootstrap(target, embedder=never)
    opened.extend([src, dst])
    try:
        return migrate_store(src, dst, **kwargs)
    finally:
        src.close()
        dst.close()


def answers(kb: KnowledgeBase, scores: bool) -> list[list[tuple[str, str, float]]]:
    """The top five hits of each query; with their scores when ``scores``."""
    return [[(h.path, h.heading, round(h.score, 4) if scores else 0.0)
             for h in kb.search(q, limit=5).results] for q in QUERIES]


def open_on(s: Settings, embedder: FastEmbedEmbedder) -> KnowledgeBase:
    return KnowledgeBase(bootstrap(s, embedder=embedder))


def assert_same_index(source: Settings, target: Settings, embedder: FastEmbedEmbedder,
                      *, same_scores: bool = True) -> None:
    """Same rows, same chunk ids in the same order, same vectors, same answers, healthy.
    Another database ranks its lexical leg its own way: ``same_scores=False`` then asks
    for the same hits in the same order only."""
    src, dst = open_on(source, embedder), open_on(target, embedder)
    try:
        s_store, d_store = src._container.store, dst._container.store
        assert d_store.document_paths() == s_store.document_paths()
        for path in s_store.document_paths():
            assert d_store.document_chunk_hashes(path) == s_store.document_chunk_hashes(path)
            assert sorted(d_store.chunk_ids_for([path])) == sorted(s_store.chunk_ids_for([path]))
            s_doc, d_doc = s_store.get_document(path), d_store.get_document(path)
            assert s_doc is not None and d_doc is not None
            assert (d_doc.title, d_doc.tags, d_doc.date, d_doc.size_bytes, d_doc.content_hash) \
                == (s_doc.title, s_doc.tags, s_doc.date, s_doc.size_bytes, s_doc.content_hash)
        ids = s_store.chunk_ids()
        assert dst._container.vectors.get(ids) == src._container.vectors.get(ids)
        # each copied vector carries its chunk's labels (decision 0058's addendum)
        assert dst._container.vectors.labelled()
        assert d_store.stats().model_id == s_store.stats().model_id
        assert d_store.stats().last_run == s_store.stats().last_run
        # the next index run there trusts the vectors without listing them
        assert d_store.get_meta(META_VECTORS) == dst._container.vectors.fingerprint()
        # and knows which text its vectors were made from (decision 0020)
        assert d_store.get_meta(META_EMBED_TEXT) == s_store.get_meta(META_EMBED_TEXT) \
            == EMBED_TEXT
        assert answers(dst, same_scores) == answers(src, same_scores)
        report = dst.doctor()
        assert report.healthy, report.as_dict()
    finally:
        src.close()
        dst.close()


def test_a_copy_answers_as_the_source_and_embeds_nothing(
    tmp_path: Path, source_kb: Path, embedder: FastEmbedEmbedder, opened: Opened,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(index_copy, "BATCH_DOCUMENTS", 3)  # several batches
    source = settings(source_kb)
    target = settings(source_kb, database_url=sqlite_url(tmp_path / "team" / "index.db"),
                      vectors_uri=str(tmp_path / "team-vectors"))
    seen: list[tuple[int, int]] = []
    report = copy(opened, source, target, progress=lambda done, total: seen.append((done, total)))
    assert (report.documents, report.resumed, report.shared_vectors) == (len(CORPUS), False, False)
    assert report.vectors == report.chunks > len(CORPUS)
    assert seen[-1] == (len(CORPUS), len(CORPUS)) and len(seen) == 3
    assert (tmp_path / "team-vectors").is_dir()
    assert_same_index(source, target, embedder)
    # the copy is a finished index: a run over the unchanged files embeds nothing
    kb = KnowledgeBase(bootstrap(target, embedder=NeverEmbeds(source.embedding_model, 384)))
    try:
        run = kb.index()
    finally:
        kb.close()
    assert (run.unchanged, run.added, run.updated, run.chunks_embedded) == (len(CORPUS), 0, 0, 0)


def test_without_vectors_to_the_vectors_stay_and_are_shared(
    tmp_path: Path, source_kb: Path, embedder: FastEmbedEmbedder, opened: Opened,
) -> None:
    source = settings(source_kb)
    target = settings(source_kb, database_url=sqlite_url(tmp_path / "team.db"))
    before = source_kb / ".kb-mcp" / "vectors"
    listing = sorted(p.relative_to(before) for p in before.rglob("*"))
    report = copy(opened, source, target)
    assert (report.shared_vectors, report.vectors) == (True, 0)
    assert sorted(p.relative_to(before) for p in before.rglob("*")) == listing
    assert_same_index(source, target, embedder)


def test_refusals_write_nothing(tmp_path: Path, source_kb: Path, opened: Opened) -> None:
    source = settings(source_kb)
    team = tmp_path / "team.db"
    target = settings(source_kb, database_url=sqlite_url(team),
                      vectors_uri=str(tmp_path / "tv"))
    # the configured model is not the one the index was built with
    other = settings(source_kb, embedding_model="BAAI/bge-small-en-v1.5")
    with pytest.raises(ModelMismatch, match="all-MiniLM"):
        copy(opened, other, settings(source_kb, database_url=sqlite_url(team),
                                     embedding_model="BAAI/bge-small-en-v1.5"))
    assert not team.exists()
    # a folder that was never indexed
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(IndexNotFound):
        copy(opened, settings(empty), settings(empty, database_url=sqlite_url(team)))
    assert not team.exists()
    # the target is the source itself
    with pytest.raises(ConfigError, match="being copied"):
        copy(opened, source, settings(source_kb, database_url=sqlite_url(
            source_kb / ".kb-mcp" / "index.db")))
    # a target that holds an index of another model
    with SqlIndexStore(sqlite_url(team), create=True) as store:
        store.set_meta(META_MODEL, "BAAI/bge-small-en-v1.5")
        store.set_meta(META_DIMENSION, "384")
    with pytest.raises(ConfigError, match="bge-small-en-v1.5.*all-MiniLM|empty database"):
        copy(opened, source, target)
    with SqlIndexStore(sqlite_url(team)) as store:
        assert store.stats().documents == 0
    assert not (tmp_path / "tv").exists()


def test_a_target_with_documents_is_refused_unless_replace(
    tmp_path: Path, source_kb: Path, embedder: FastEmbedEmbedder, opened: Opened,
) -> None:
    # another knowledge base (same model) already copied into the team store
    other_root = tmp_path / "other"
    write_files(other_root, {"old/notes.md": "# Old\n\nAn old note about the office move.\n",
                             "ops/rotation.md": "# Stale\n\nA stale copy of the rotation.\n"})
    other = settings(other_root)
    kb = open_on(other, embedder)
    kb.index()
    kb.close()
    team = dict(database_url=sqlite_url(tmp_path / "team.db"), vectors_uri=str(tmp_path / "tv"))
    copy(opened, other, settings(other_root, **team))
    source, target = settings(source_kb), settings(source_kb, **team)
    with pytest.raises(ConfigError, match="already holds 2 documents.*--replace"):
        copy(opened, source, target)
    report = copy(opened, source, target, replace_target=True)
    assert report.removed == 2
    assert_same_index(source, target, embedder)


class Crash(Exception):
    """Stands for the process being killed."""


def test_an_interrupted_copy_is_marked_and_the_same_command_finishes_it(
    tmp_path: Path, source_kb: Path, embedder: FastEmbedEmbedder, opened: Opened,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(index_copy, "BATCH_DOCUMENTS", 3)
    source = settings(source_kb)
    target = settings(source_kb, database_url=sqlite_url(tmp_path / "team.db"),
                      vectors_uri=str(tmp_path / "tv"))
    real_add = index_copy._Copy._copy_batch
    calls = {"n": 0}

    def dies_in_second_batch(self: Any, paths: Sequence[str], have: set[int]) -> Any:
        calls["n"] += 1
        if calls["n"] == 2:
            for doc in self.source.documents(paths[:1]):  # one row written, no vectors
                self.target.write_document(index_copy._document_record(doc), [])
            raise Crash
        return real_add(self, paths, have)

    monkeypatch.setattr(index_copy._Copy, "_copy_batch", dies_in_second_batch)
    with pytest.raises(Crash):
        copy(opened, source, target)
    monkeypatch.setattr(index_copy._Copy, "_copy_batch", real_add)
    half = open_on(target, embedder)
    try:
        store = half._container.store
        assert store.get_meta(META_COPY)  # clearly marked as unfinished
        assert store.get_meta(META_IN_PROGRESS)
        assert 0 < store.stats().documents < len(CORPUS)
        health = half.doctor()
        unfinished = [f for f in health.findings if f.check == "copy-unfinished"]
        assert unfinished and unfinished[0].severity == "error"
        assert "run the interrupted migrate-store command again" in unfinished[0].remedy
    finally:
        half.close()
    # another source may not take the half-copied target over without --replace
    other_root = tmp_path / "other"
    write_files(other_root, {"x.md": "# X\n\nSomething else entirely.\n"})
    kb = open_on(settings(other_root), embedder)
    kb.index()
    kb.close()
    with pytest.raises(ConfigError, match="unfinished copy"):
        copy(opened, settings(other_root), settings(other_root, database_url=sqlite_url(
            tmp_path / "team.db"), vectors_uri=str(tmp_path / "tv")))
    report = copy(opened, source, target)
    assert report.resumed and report.already_copied == 3
    assert_same_index(source, target, embedder)
    done = open_on(target, embedder)
    try:
        assert not done._container.store.get_meta(META_COPY)
        assert not done._container.store.get_meta(META_IN_PROGRESS)
        assert "copy-unfinished" not in {f.check for f in done.doctor().findings}
    finally:
        done.close()


def test_a_copy_to_postgresql_answers_as_the_source(
    tmp_path: Path, source_kb: Path, embedder: FastEmbedEmbedder, opened: Opened, pg_url: str,
) -> None:
    source = settings(source_kb)
    target = settings(source_kb, database_url=pg_url, vectors_uri=str(tmp_path / "tv"))
    report = copy(opened, source, target)
    assert report.documents == len(CORPUS)
    assert_same_index(source, target, embedder, same_scores=False)


def test_a_copy_to_postgresql_with_vectors_in_object_storage(
    source_kb: Path, embedder: FastEmbedEmbedder, opened: Opened, pg_url: str,
    s3_server: S3Server,
) -> None:
    """The team set-up: the index store in PostgreSQL, the vectors in S3 (moto on loopback)."""
    bucket = s3_server.new_bucket()
    source = settings(source_kb)
    target = settings(source_kb, database_url=pg_url, vectors_uri=f"s3://{bucket}/team",
                      vectors_storage_options=s3_server.storage_options())
    report = copy(opened, source, target)
    assert (report.documents, report.shared_vectors) == (len(CORPUS), False)
    assert report.vectors == report.chunks
    assert not (source_kb / ".kb-mcp" / "team").exists()
    assert_same_index(source, target, embedder, same_scores=False)
