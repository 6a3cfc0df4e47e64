"""Filters in the vector table (decision 0058's addendum) on the real SQLite store and
LanceDB: a filter the chunks' labels say is LanceDB's prefilter on indexed columns, with
the hits the allowed ids gave (exact search on a small table) and the limit on an
approximate index whenever enough chunks pass; a metadata-only change (a tag added, then
removed) moves a document in and out of a tag filter without one embedding; an index whose
vectors carry no labels (made before them) answers filtered searches by ids until the next
``index`` labels it, again without embedding."""

from __future__ import annotations

from collections.abc import Collection, Iterator
from pathlib import Path
from typing import Any

import lancedb
import numpy as np
import pyarrow as pa
import pytest

from kbmcp_adapters.app.bootstrap import bootstrap
from kbmcp_adapters.app.config import build_settings
from kbmcp_adapters.app.knowledge_base import KnowledgeBase
from kbmcp_adapters.parsers.registry import build_registry
from kbmcp_adapters.store.sql_store import SqlIndexStore
from kbmcp_adapters.vectors.lance_store import LanceVectorStore
from kbmcp_core.chunk_labels import ChunkLabels, LabelFilter
from kbmcp_core.label_sync import labels_for
from kbmcp_core.models import Vector
from kbmcp_core.offer import OfferRules
from kbmcp_core.search import Searcher
from kbmcp_core.search_request import SearchRequest
from tests.conftest import write_files
from tests.fakes import FakeEmbedder
from tests.hashing_embedder import HashingEmbedder
from tests.integration.test_filtered_search import DIM, _chunks, _document
from tests.s3_server import S3Server

#: filters the labels say: a folder, tags (any, all), a year, a category, a topic, and
#: several at once
LABELLED: list[dict[str, Any]] = [
    {"path_globs": ("notes/**",)},
    {"tags_any": ("t3",)},
    {"tags_all": ("t1", "even")},
    {"date_from": "2022-01-01", "date_to": "2022-12-31"},
    {"category": "CAT2"},
    {"topic": "ops"},
    {"path_globs": ("archive/*",), "tags_any": ("t1", "t3"), "date_from": "2021-06-01"},
]


class Watched:
    """A vector reader that records how its searches were filtered, and can pretend to
    carry no labels (the searcher then hands over allowed ids, as before labels)."""

    def __init__(self, vectors: LanceVectorStore, labelled: bool) -> None:
        self.vectors, self._labelled = vectors, labelled
        #: per search: "ids", "labels", or "no labels" (asked by labels, refused)
        self.ways: list[str] = []

    def get(self, ids: Collection[int]) -> dict[int, Vector]:
        return self.vectors.get(ids)

    def ids(self) -> set[int]:
        return self.vectors.ids()

    def count(self) -> int:
        return self.vectors.count()

    def fingerprint(self) -> str | None:
        return self.vectors.fingerprint()

    def labelled(self) -> bool:
        return self._labelled and self.vectors.labelled()

    def search(self, vector: Vector, limit: int, allowed_ids: Collection[int] | None = None
               ) -> list[tuple[int, float]]:
        self.ways.append("ids" if allowed_ids is not None else "unfiltered")
        return self.vectors.search(vector, limit, allowed_ids)

    def search_labelled(self, vector: Vector, limit: int, where: LabelFilter
                        ) -> list[tuple[int, float]] | None:
        if not self._labelled:
            self.ways.append("no labels")
            return None
        self.ways.append("labels")
        return self.vectors.search_labelled(vector, limit, where)


@pytest.fixture(scope="module")
def labelled(tmp_path_factory: pytest.TempPathFactory
             ) -> Iterator[tuple[SqlIndexStore, LanceVectorStore]]:
    """The corpus of ``test_filtered_search`` with each vector's labels."""
    tmp = tmp_path_factory.mktemp("labelled")
    store = SqlIndexStore(f"sqlite:///{tmp / 'index.db'}", create=True)
    vectors = LanceVectorStore(tmp / "vectors", DIM)
    embedder = HashingEmbedder(dimension=DIM)
    for d in range(40):
        store.write_document(_document(d), _chunks(d))
    labels = labels_for(store, None)
    chunks = store.get_chunks(set(labels))
    ids = sorted(chunks)
    vectors.add(ids, embedder.embed_documents([chunks[i].content for i in ids]),
                [labels[i] for i in ids])
    vectors.compact()
    yield store, vectors
    store.close()


@pytest.mark.parametrize("mode", ["vector", "hybrid"])
@pytest.mark.parametrize("spec", LABELLED, ids=range(len(LABELLED)))
def test_a_filter_on_labels_returns_what_the_allowed_ids_returned(
        labelled: tuple[SqlIndexStore, LanceVectorStore], spec: dict[str, Any], mode: str
) -> None:
    store, vectors = labelled
    embedder = HashingEmbedder(dimension=DIM)
    rules = OfferRules(store, build_registry(["md"]))
    by_labels, by_ids = Watched(vectors, labelled=True), Watched(vectors, labelled=False)
    request = SearchRequest.of("lantern harbor near the compass", limit=20,
                               chunks_per_document=2, mode=mode, **spec)
    new = Searcher(store, by_labels, embedder, rules).search(request)
    old = Searcher(store, by_ids, embedder, rules).search(request)
    assert new.results  # every filter keeps some of the 40 documents
    # the same chunks in the same order; the similarities LanceDB's (float32) against
    # numpy's over the kept vectors: equal within rounding
    assert [h.chunk_id for h in new.results] == [h.chunk_id for h in old.results]
    assert [h.score for h in new.results] == pytest.approx([h.score for h in old.results],
                                                           abs=1e-6)
    assert set(by_labels.ways) == {"labels"}
    assert by_ids.ways == ["no labels", "ids"] * (len(by_ids.ways) // 2)


def test_an_excluded_glob_or_term_still_filters_by_ids(
        labelled: tuple[SqlIndexStore, LanceVectorStore]) -> None:
    store, vectors = labelled
    watched = Watched(vectors, labelled=True)
    searcher = Searcher(store, watched, HashingEmbedder(dimension=DIM),
                        OfferRules(store, build_registry(["md"])))
    excluded = searcher.search(SearchRequest.of("lantern", mode="vector",
                                                path_globs=("notes/**", "!*/doc-00*")))
    assert excluded.results and not any("doc-00" in h.path for h in excluded.results)
    searcher.search(SearchRequest.of("lantern -harbor", mode="vector", tags_any=("t1",)))
    assert watched.ways == ["ids", "ids"]


def test_an_approximate_index_gives_the_limit_when_enough_chunks_pass(tmp_path: Path) -> None:
    rng = np.random.default_rng(7)
    rows, far = 3000, 300
    matrix = rng.standard_normal((rows, DIM)).astype(np.float32)
    query = matrix[0].copy()
    matrix[-far:] = -query + 0.3 * rng.standard_normal((far, DIM)).astype(np.float32)
    labels = [ChunkLabels(("far",) if i >= rows - far else ("near",)) for i in range(rows)]
    vectors = LanceVectorStore(tmp_path / "vectors", DIM, ann_min_rows=1000)
    vectors.add(list(range(rows)), matrix.tolist(), labels)
    vectors.compact()
    assert vectors.ann_state() is not None and vectors.labelled()
    hits = vectors.search_labelled(query.tolist(), 10, LabelFilter(folders_any=("far",)))
    assert hits is not None
    # every allowed row lies farther than every other: the limit all the same (how near
    # the approximate hits come to exact search is the million bench's recall row)
    assert len(hits) == 10 and all(cid >= rows - far for cid, _ in hits)


FILES = {
    "notes/lantern.md": "---\ntags: [harbour]\n---\n# Lantern\n\nThe lantern by the harbour.\n",
    "notes/beacon.md": "---\ntags: [coast]\n---\n# Beacon\n\nThe beacon near the harbour.\n",
    "misc/compass.md": "# Compass\n\nA compass and the harbour lantern.\n",
}


def _open(root: Path, embedder: FakeEmbedder) -> KnowledgeBase:
    return KnowledgeBase(bootstrap(build_settings(None, cwd=root, kb_path=root),
                                   embedder=embedder))


def _found(kb: KnowledgeBase, **params: Any) -> set[str]:
    return {h.path for h in kb.search("harbour lantern", limit=20, mode="vector",
                                      **params).results}


@pytest.fixture
def root(tmp_path: Path) -> Path:
    root = tmp_path / "kb"
    write_files(root, FILES)
    return root


def test_a_tag_added_and_removed_moves_a_document_in_and_out_without_embedding(
        root: Path) -> None:
    embedder = FakeEmbedder()
    kb = _open(root, embedder)
    try:
        kb.index()
        assert LanceVectorStore(root / ".kb-mcp" / "vectors", 16).labelled()
        assert _found(kb, tags_any=["harbour"]) == {"notes/lantern.md"}
        embedded = len(embedder.embedded)
        beacon = root / "notes" / "beacon.md"
        beacon.write_text(beacon.read_text().replace("[coast]", "[coast, Harbour]"))
        summary = kb.index()
        assert summary.metadata_only == 1 and len(embedder.embedded) == embedded
        assert _found(kb, tags_any=["harbour"]) == {"notes/lantern.md", "notes/beacon.md"}
        assert _found(kb, tags_all=["harbour", "coast"]) == {"notes/beacon.md"}
        beacon.write_text(beacon.read_text().replace("[coast, Harbour]", "[coast]"))
        assert kb.index().metadata_only == 1 and len(embedder.embedded) == embedded
        assert _found(kb, tags_any=["harbour"]) == {"notes/lantern.md"}
        assert _found(kb, path_globs=["notes/**"], tags_any=["coast"]) == {"notes/beacon.md"}
    finally:
        kb.close()


def _unlabel(vectors_dir: Path) -> None:
    """The vector table as an index made before labels left it: ids and vectors only."""
    db = lancedb.connect(vectors_dir)
    rows = db.open_table("chunks").search().select(["chunk_id", "vector"]).limit(None)
    data = rows.to_arrow()
    db.drop_table("chunks")
    db.create_table("chunks", data)


def test_an_index_made_before_labels_filters_by_ids_until_the_next_run_labels_it(
        root: Path) -> None:
    embedder = FakeEmbedder()
    kb = _open(root, embedder)
    filters: list[dict[str, Any]] = [{"path_globs": ["notes/**"]}, {"tags_any": ["coast"]},
                                     {"path_globs": ["misc/*"]}]
    try:
        kb.index()
        before = [_found(kb, **f) for f in filters]
    finally:
        kb.close()
    assert before == [{"notes/lantern.md", "notes/beacon.md"}, {"notes/beacon.md"},
                      {"misc/compass.md"}]
    vectors_dir = root / ".kb-mcp" / "vectors"
    _unlabel(vectors_dir)
    assert not LanceVectorStore(vectors_dir, 16).labelled()
    embedded = len(embedder.embedded)
    kb = _open(root, embedder)
    try:
        assert [_found(kb, **f) for f in filters] == before  # the allowed ids, as before
        summary = kb.index()
        assert summary.chunks_embedded == 0 and len(embedder.embedded) == embedded
        assert LanceVectorStore(vectors_dir, 16).labelled()
        assert [_found(kb, **f) for f in filters] == before
    finally:
        kb.close()


def test_an_older_table_in_object_storage_is_labelled_in_place(s3_server: S3Server) -> None:
    uri = f"s3://{s3_server.new_bucket()}/team/vectors"
    options = s3_server.storage_options()
    old = pa.table({"chunk_id": pa.array([1, 2, 3], type=pa.int64()),
                    "vector": pa.FixedSizeListArray.from_arrays(
                        pa.array(np.eye(3, DIM, dtype=np.float32).reshape(-1)), DIM)})
    lancedb.connect(uri, storage_options=options).create_table("chunks", old)
    vectors = LanceVectorStore(uri, DIM, storage_options=options)
    in_a = LabelFilter(folders_any=("a",))
    assert not vectors.labelled()
    assert vectors.search_labelled([1.0] + [0.0] * (DIM - 1), 5, in_a) is None
    vectors.relabel({1: ChunkLabels(("a",)), 2: ChunkLabels(("b",)), 3: ChunkLabels(("a",))})
    assert vectors.labelled()
    found = vectors.search_labelled([1.0] + [0.0] * (DIM - 1), 5, in_a)
    assert found is not None and [cid for cid, _ in found] == [1, 3]
    vectors.append([4], [[0.0] * (DIM - 1) + [1.0]], [ChunkLabels(("a",))])
    vectors.compact()
    assert vectors.labelled() and vectors.count() == 4


def test_an_edit_that_changes_a_tag_relabels_the_chunks_it_keeps(root: Path) -> None:
    """The text and a tag edited together: the chunks whose text did not change keep
    their ids and vectors (decision 0058's second addendum), and their labels follow the
    new tag, so a search under it still finds them."""
    beacon = root / "notes" / "beacon.md"
    # sections long enough to be chunks of their own
    tower = " ".join(f"The beacon tower stands on rock {n} near the cliffs." for n in range(60))
    keeper = " ".join(f"The keeper lights lantern {n} at dusk." for n in range(60))
    beacon.write_text(f"---\ntags: [coast]\n---\n# Beacon\n\n{tower}\n\n"
                      f"## Keeper\n\n{keeper}\n")
    embedder = FakeEmbedder()
    kb = _open(root, embedder)

    def beacon_hit(**params: Any) -> str | None:
        """The section of the beacon's note a search about its tower finds, if any."""
        return next((h.heading for h in kb.search("beacon tower stands on rock cliffs",
                                                  limit=20, mode="vector", **params).results
                     if h.path == "notes/beacon.md"), None)

    try:
        kb.index()
        assert beacon_hit() == "Beacon"
        assert beacon_hit(tags_any=["harbour"]) is None
        beacon.write_text(beacon.read_text().replace("[coast]", "[coast, harbour]")
                          .replace("lantern 7 at dusk", "lantern 7 every evening"))
        summary = kb.index()
        assert summary.updated == 1 and summary.metadata_only == 0
        assert summary.chunks_reused >= 1  # the tower's section kept its vector
        assert beacon_hit(tags_any=["harbour"]) == "Beacon"
        assert beacon_hit(tags_all=["harbour", "coast"]) == "Beacon"
    finally:
        kb.close()

