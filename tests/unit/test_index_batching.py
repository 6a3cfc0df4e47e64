"""Phase one writes many documents per transaction (ADR 0017): all of a batch or none of it,
progress still per file, and a run that dies mid-batch is completed by the next one."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from kbmcp_core.errors import StoreError
from kbmcp_core.index_deps import IndexDeps
from kbmcp_core.index_files import ChunkIds
from kbmcp_core.index_run import WRITE_BATCHES, run_index
from kbmcp_core.meta_keys import META_IN_PROGRESS
from kbmcp_core.ports import DocumentWrite
from tests.fakes import (
    FakeFileSystem,
    FakeIndexStore,
    FakeVectorStore,
    fake_deps,
)

#: One-chunk files; batch_size 1 makes WRITE_BATCHES chunks per write transaction.
FILES = 2 * WRITE_BATCHES + 22


def corpus(n: int = FILES) -> FakeFileSystem:
    return FakeFileSystem({f"n{i:05d}.md": f"# Note {i}\nnote{i} shared words\n".encode()
                           for i in range(n)})


class CountingStore(FakeIndexStore):
    """Records each write transaction; ``fail_on`` (1-based) makes that one fail whole."""

    def __init__(self, fail_on: int | None = None) -> None:
        super().__init__()
        self.transactions: list[list[str]] = []
        self.fail_on = fail_on

    def write_documents(self, batch: Sequence[DocumentWrite]) -> list[int]:
        if self.fail_on is not None and len(self.transactions) + 1 == self.fail_on:
            self.transactions.append([])
            raise StoreError("index store error: disk I/O error")  # nothing of it written
        self.transactions.append([w.document.path for w in batch])
        return super().write_documents(batch)


def deps(fs: FakeFileSystem, store: FakeIndexStore, vectors: FakeVectorStore | None = None
         ) -> IndexDeps:
    return fake_deps(fs, store=store, vectors=vectors, batch_size=1)


def whole(store: FakeIndexStore) -> bool:
    """Every stored document has all the chunks its file gives (one per note here)."""
    return all(len(d.chunks) == 1 for d in store.docs.values())


def test_many_documents_share_a_transaction_and_progress_still_counts_each_file() -> None:
    fs = corpus()
    store = CountingStore()
    seen: list[tuple[str, int, int, str]] = []
    summary = run_index(deps(fs, store), progress=lambda *event: seen.append(event))

    assert summary.added == FILES and sorted(store.docs) == sorted(fs.files)
    # one-chunk documents in 3 transactions of at most WRITE_BATCHES chunks, not one each
    assert [len(t) for t in store.transactions] == [WRITE_BATCHES, WRITE_BATCHES, 22]
    text = [e for e in seen if e[0] == "text"]
    assert text[0] == ("text", 0, FILES, "")
    assert [(done, item) for _, done, _, item in text[1:]] == [
        (i, f"n{i - 1:05d}.md") for i in range(1, FILES + 1)]


def test_phase_one_ends_only_when_every_batch_is_written() -> None:
    fs = corpus()
    store = CountingStore()
    stored_at_end: list[int] = []

    def progress(phase: str, done: int, total: int, _item: str) -> None:
        if phase == "text" and done == total:
            stored_at_end.append(len(store.docs))

    run_index(deps(fs, store), progress=progress)
    assert stored_at_end == [FILES]


def test_a_failed_batch_leaves_none_of_its_documents_and_the_next_run_completes() -> None:
    fs = corpus()
    store = CountingStore(fail_on=2)
    vectors = FakeVectorStore()
    with pytest.raises(StoreError):
        run_index(deps(fs, store, vectors))

    first = store.transactions[0]
    assert sorted(store.docs) == sorted(first)  # batch 1 whole, nothing of batch 2 or 3
    assert whole(store) and store.meta.get(META_IN_PROGRESS)

    store.fail_on = None
    summary = run_index(deps(fs, store, vectors))
    assert summary.added == FILES - len(first) and summary.unchanged == len(first)
    assert sorted(store.docs) == sorted(fs.files) and whole(store)
    assert store.chunk_ids() == vectors.ids()  # every chunk got its vector
    assert not store.meta.get(META_IN_PROGRESS)


def test_a_run_stopped_mid_phase_keeps_every_batch_it_handed_over_whole() -> None:
    fs = corpus()
    store = CountingStore()

    class Stop(Exception):
        pass

    def progress(phase: str, done: int, _total: int, _item: str) -> None:
        if phase == "text" and done == WRITE_BATCHES + WRITE_BATCHES // 2:  # mid second batch
            raise Stop

    with pytest.raises(Stop):
        run_index(deps(fs, store), progress=progress)
    assert sorted(store.docs) == sorted(store.transactions[0]) and whole(store)

    summary = run_index(deps(fs, store))
    assert summary.added == FILES - WRITE_BATCHES and sorted(store.docs) == sorted(fs.files)
    assert whole(store)


def test_chunk_ids_increase_within_a_run_and_from_one_run_to_the_next() -> None:
    first, second = ChunkIds(), ChunkIds()  # two runs started in the same millisecond
    a = [first() for _ in range(1000)]
    b = [second() for _ in range(1000)]
    assert a == sorted(a) and b == sorted(b) and a[-1] < b[0]
    assert 0 < a[0] < 2**62 and len(set(a + b)) == 2000
