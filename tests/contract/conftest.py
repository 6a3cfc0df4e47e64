"""The backends every contract test runs against: a new store is one more factory here."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

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
def _fake_index_store(_tmp_path: Path) -> Iterator[StoreUnderTest]:
    store = FakeIndexStore()

    def forget_size(path: str) -> None:
        store.docs[path].size_bytes = None

    yield StoreUnderTest(store, forget_size)


@contextmanager
def _sqlite_index_store(tmp_path: Path) -> Iterator[StoreUnderTest]:
    import sqlite3

    from kbmcp_adapters.store.sql_store import SqlIndexStore

    db = tmp_path / "index.db"

    def forget_size(path: str) -> None:
        with sqlite3.connect(db) as conn:
            conn.execute("UPDATE documents SET size_bytes = NULL WHERE path = ?", (path,))
        conn.close()

    with SqlIndexStore(f"sqlite:///{db}", create=True) as store:
        yield StoreUnderTest(store, forget_size)


#: name -> factory; PostgreSQL joins as one more entry.
INDEX_STORES: dict[str, Callable[[Path], AbstractContextManager[StoreUnderTest]]] = {
    "fake": _fake_index_store,
    "sqlite": _sqlite_index_store,
}


@contextmanager
def _fake_vector_store(_tmp_path: Path) -> Iterator[VectorStore]:
    yield FakeVectorStore()


@contextmanager
def _lance_vector_store(tmp_path: Path) -> Iterator[VectorStore]:
    from kbmcp_adapters.vectors.lance_store import LanceVectorStore

    yield LanceVectorStore(tmp_path / "vectors", DIM)


VECTOR_STORES: dict[str, Callable[[Path], AbstractContextManager[VectorStore]]] = {
    "fake": _fake_vector_store,
    "lancedb": _lance_vector_store,
}


@pytest.fixture(params=sorted(INDEX_STORES))
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[StoreUnderTest]:
    with INDEX_STORES[request.param](tmp_path) as under_test:
        yield under_test


@pytest.fixture
def store(backend: StoreUnderTest) -> IndexStore:
    return backend.store


@pytest.fixture(params=sorted(VECTOR_STORES))
def vectors(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[VectorStore]:
    with VECTOR_STORES[request.param](tmp_path) as store:
        yield store
