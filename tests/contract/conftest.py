"""The backends every contract test runs against: a new store is one more factory here."""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from kbmcp_core.chunk_labels import ChunkLabels
from kbmcp_core.models import Vector
from kbmcp_core.ports import IndexStore, VectorStore
from tests.fakes import FakeIndexStore, FakeVectorStore

#: Vector length of the vector-store contract.
DIM = 8


@dataclass(frozen=True)
class StoreUnderTest:
    """An index store, and how to put one of its rows in the state an index written by an
    older kb-mcp leaves it in (no size recorded): no port method does that."""

    store: IndexStore
    forget_size: Callable[[str], None]


@contextmanager
def _fake_index_store(_request: pytest.FixtureRequest, _tmp_path: Path
                      ) -> Iterator[StoreUnderTest]:
    store = FakeIndexStore()

    def forget_size(path: str) -> None:
        store.docs[path].size_bytes = None

    yield StoreUnderTest(store, forget_size)


@contextmanager
def _sqlite_index_store(_request: pytest.FixtureRequest, tmp_path: Path
                        ) -> Iterator[StoreUnderTest]:
    import sqlite3

    from kbmcp_adapters.store.sql_store import SqlIndexStore

    db = tmp_path / "index.db"

    def forget_size(path: str) -> None:
        with sqlite3.connect(db) as conn:
            conn.execute("UPDATE documents SET size_bytes = NULL WHERE path = ?", (path,))
        conn.close()

    with SqlIndexStore(f"sqlite:///{db}", create=True) as store:
        yield StoreUnderTest(store, forget_size)


@contextmanager
def _pg_index_store(request: pytest.FixtureRequest, _tmp_path: Path
                    ) -> Iterator[StoreUnderTest]:
    """The store on a fresh database of the session's PostgreSQL cluster (tests/pg_cluster.py)."""
    from kbmcp_adapters.store.sql_store import SqlIndexStore

    cluster = request.getfixturevalue("pg_cluster")
    url = cluster.new_database()

    def forget_size(path: str) -> None:
        with cluster.connect(url.rsplit("/", 1)[1]) as conn:
            conn.execute("UPDATE documents SET size_bytes = NULL WHERE path = %s", (path,))

    with SqlIndexStore(url, create=True) as store:
        yield StoreUnderTest(store, forget_size)


#: name -> factory(request, tmp_path); a factory may ask for a session fixture (a server).
INDEX_STORES: dict[
    str, Callable[[pytest.FixtureRequest, Path], AbstractContextManager[StoreUnderTest]]
] = {
    "fake": _fake_index_store,
    "sqlite": _sqlite_index_store,
    "postgresql": _pg_index_store,
}


@contextmanager
def _fake_vector_store(_request: pytest.FixtureRequest, _tmp_path: Path) -> Iterator[VectorStore]:
    yield FakeVectorStore()


@contextmanager
def _lance_vector_store(_request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[VectorStore]:
    from kbmcp_adapters.vectors.lance_store import LanceVectorStore

    yield LanceVectorStore(tmp_path / "vectors", DIM)


@contextmanager
def _lance_s3_vector_store(
    request: pytest.FixtureRequest, _tmp_path: Path
) -> Iterator[VectorStore]:
    """LanceDB on moto's S3 server (tests/s3_server.py), a fresh bucket per test."""
    from kbmcp_adapters.vectors.lance_store import LanceVectorStore

    server = request.getfixturevalue("s3_server")
    uri = f"s3://{server.new_bucket()}/team/vectors"
    yield LanceVectorStore(uri, DIM, storage_options=server.storage_options())


class JointUnderTest:
    """The joint view of two collections' vector stores (``joint_search``) under the
    contract: it is a ``VectorReader`` only, so the writes go to the collection a joint id
    names (``local × 2 + i``, as the view numbers them) and every read goes through it."""

    def __init__(self) -> None:
        from kbmcp_core.joint_search import Part, joint_view
        from kbmcp_core.offer import OfferRules
        from tests.fakes import FakeEmbedder, FakeRegistry

        self.parts = [FakeVectorStore(), FakeVectorStore()]
        index = FakeIndexStore()
        self.view = joint_view([Part(name, index, vectors, FakeEmbedder(),
                                     OfferRules(index, FakeRegistry()), "one-model")
                                for name, vectors in zip("ab", self.parts, strict=True)])
        reader = self.view.vectors
        self.get, self.ids, self.count = reader.get, reader.ids, reader.count
        self.search, self.fingerprint = reader.search, reader.fingerprint
        self.labelled = reader.labelled  # never: a joint search filters by ids
        self.search_labelled = reader.search_labelled

    def _split(self, ids: Sequence[int], vectors: Sequence[Vector]
               ) -> list[tuple[list[int], list[Vector]]]:
        out: list[tuple[list[int], list[Vector]]] = [([], []), ([], [])]
        for gid, v in zip(ids, vectors, strict=True):
            out[gid % 2][0].append(gid // 2)
            out[gid % 2][1].append(v)
        return out

    def add(self, ids: Sequence[int], vectors: Sequence[Vector],
            labels: Sequence[ChunkLabels] | None = None) -> None:
        for part, (local, vs) in zip(self.parts, self._split(ids, vectors), strict=True):
            part.add(local, vs)

    def append(self, ids: Sequence[int], vectors: Sequence[Vector],
               labels: Sequence[ChunkLabels] | None = None) -> None:
        for part, (local, vs) in zip(self.parts, self._split(ids, vectors), strict=True):
            part.append(local, vs)

    def relabel(self, labels: Mapping[int, ChunkLabels]) -> None:
        return None  # a joint view is never labelled

    def delete(self, ids: Collection[int]) -> None:
        for i, part in enumerate(self.parts):
            part.delete({gid // 2 for gid in ids if gid % 2 == i})

    def reset(self) -> None:
        for part in self.parts:
            part.reset()

    def compact(self) -> None:
        for part in self.parts:
            part.compact()


@contextmanager
def _joint_vector_store(_request: pytest.FixtureRequest, _tmp_path: Path
                        ) -> Iterator[VectorStore]:
    joint = JointUnderTest()
    with joint.view:
        yield joint


#: name -> factory(request, tmp_path): a factory may ask for a session fixture (a server).
VECTOR_STORES: dict[
    str, Callable[[pytest.FixtureRequest, Path], AbstractContextManager[VectorStore]]
] = {
    "fake": _fake_vector_store,
    "lancedb": _lance_vector_store,
    "lancedb-s3": _lance_s3_vector_store,
    "joint": _joint_vector_store,
}


@pytest.fixture(params=sorted(INDEX_STORES))
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[StoreUnderTest]:
    with INDEX_STORES[request.param](request, tmp_path) as under_test:
        yield under_test


@pytest.fixture
def store(backend: StoreUnderTest) -> IndexStore:
    return backend.store


@pytest.fixture
def two_more(backend: StoreUnderTest, request: pytest.FixtureRequest, tmp_path: Path
             ) -> Iterator[tuple[IndexStore, IndexStore]]:
    """Two more empty stores of the kind ``store`` is: collections a joint search pools."""
    kind = request.node.callspec.params["backend"]
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    with INDEX_STORES[kind](request, tmp_path / "a") as a, \
            INDEX_STORES[kind](request, tmp_path / "b") as b:
        yield a.store, b.store


@pytest.fixture(params=sorted(VECTOR_STORES))
def vectors(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[VectorStore]:
    with VECTOR_STORES[request.param](request, tmp_path) as store:
        yield store
