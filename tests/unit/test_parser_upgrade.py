"""An upgraded parser re-reads the documents an older one converted (decision 0032)."""

from __future__ import annotations

import json

import pytest

from kbmcp_core.index_deps import IndexDeps
from kbmcp_core.index_run import run_index
from kbmcp_core.meta_keys import META_PARSED_WITH
from tests.fakes import FakeEmbedder, FakeFileSystem, FakeIndexStore, FakeRegistry, fake_deps


@pytest.fixture
def world() -> IndexDeps:
    fs = FakeFileSystem({
        "a.md": b"# One\nalpha text\n# Two\nbeta text\n",
        "b.md": b"# Only\ngamma text\n",
    })
    return fake_deps(fs)


def registry(world: IndexDeps) -> FakeRegistry:
    assert isinstance(world.registry, FakeRegistry)
    return world.registry


def test_a_new_parser_generation_reads_unchanged_documents_again_once(world: IndexDeps) -> None:
    run_index(world)
    assert json.loads(world.store.get_meta(META_PARSED_WITH) or "{}") == {"md": 1}
    registry(world).generation = 2  # kb-mcp upgraded: its Markdown parser changed
    again = run_index(world)
    assert (again.updated, again.unchanged) == (2, 0)
    assert json.loads(world.store.get_meta(META_PARSED_WITH) or "{}") == {"md": 2}
    after = run_index(world)  # recorded: the next run reads nothing again
    assert (after.updated, after.unchanged) == (0, 2)


def test_text_a_new_parser_leaves_the_same_keeps_its_vectors(world: IndexDeps) -> None:
    run_index(world)
    embedder = world.embedder
    assert isinstance(embedder, FakeEmbedder)
    embedded = len(embedder.embedded)
    registry(world).generation = 2
    run_index(world)
    assert len(embedder.embedded) == embedded  # same chunks: no chunk is embedded again


def test_an_index_from_before_the_mark_is_read_again_once(world: IndexDeps) -> None:
    run_index(world)
    store = world.store
    assert isinstance(store, FakeIndexStore)
    store.set_meta(META_PARSED_WITH, "")  # as an older kb-mcp left it: no mark
    again = run_index(world)
    assert again.updated == 2
    assert run_index(world).updated == 0


def test_a_damaged_mark_reads_again_rather_than_trusting_it(world: IndexDeps) -> None:
    run_index(world)
    world.store.set_meta(META_PARSED_WITH, "{not json")
    assert run_index(world).updated == 2


def test_a_moved_document_of_an_upgraded_format_is_read_at_its_new_path(
    world: IndexDeps,
) -> None:
    run_index(world)
    fs = world.fs
    assert isinstance(fs, FakeFileSystem)
    fs.files["c.md"] = fs.files.pop("b.md")
    registry(world).generation = 2
    s = run_index(world)
    assert s.renamed == 0 and s.added == 1 and s.deleted == 1
