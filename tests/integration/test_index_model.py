"""The default model is the integer copy for a NEW index; an index that records another model
keeps it while the config names none (decision 0046, ``kbmcp_adapters/app/index_model.py``)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from kbmcp_adapters.app.bootstrap import bootstrap
from kbmcp_adapters.app.config import build_settings
from kbmcp_adapters.app.knowledge_base import KnowledgeBase
from kbmcp_adapters.embedding.fastembed_embedder import (
    DEFAULT_MODEL_ID,
    INTEGER_MODEL_ID,
    PACKAGED_MODEL_ID,
)
from kbmcp_core.errors import ModelMismatch
from tests.conftest import write_files

NOTES = {
    "keys.md": "# Keys\n\nRotate the signing keys every ninety days and revoke the old ones.\n",
    "deploy.md": "# Deploying\n\nDeploys go out from the main branch after the checks pass.\n",
    "lunch.md": "# Lunch\n\nThe canteen serves soup and bread on Fridays at noon.\n",
}
QUERIES = ("how often are signing keys rotated", "when is soup served", "release process")


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    kb_path = tmp_path / "kb"
    write_files(kb_path, NOTES)
    return kb_path


@pytest.fixture
def open_real(model_cache: Path) -> Iterator[Any]:
    """Open a knowledge base whose embedder is built from its settings (the session's model
    cache, never the user's), as the CLI and the library do."""
    opened: list[KnowledgeBase] = []

    def _open(kb_path: Path, **values: Any) -> KnowledgeBase:
        settings = build_settings(None, cwd=kb_path, kb_path=kb_path,
                                  model_cache_dir=model_cache, **values)
        kb = KnowledgeBase(bootstrap(settings))
        opened.append(kb)
        return kb

    yield _open
    for kb in opened:
        kb.close()


def hits(kb: KnowledgeBase) -> list[list[tuple[str, float]]]:
    return [[(h.path, round(h.score, 6)) for h in kb.search(q, limit=3).results]
            for q in QUERIES]


def packaged_index(open_real: Any, folder: Path) -> list[list[tuple[str, float]]]:
    """Index ``folder`` with the packaged file (the default until 0046); its search hits."""
    old = open_real(folder, embedding_model=PACKAGED_MODEL_ID)
    assert old.index().added == len(NOTES)
    assert old.stats().model_id == PACKAGED_MODEL_ID
    return hits(old)


def test_the_default_for_a_new_index_is_the_integer_copy(open_real: Any, folder: Path) -> None:
    assert DEFAULT_MODEL_ID == INTEGER_MODEL_ID != PACKAGED_MODEL_ID
    kb = open_real(folder)  # the config names no model
    assert kb.index().added == len(NOTES)
    assert kb.stats().model_id == INTEGER_MODEL_ID
    assert kb.model_note() is None


def test_an_index_of_the_packaged_file_keeps_it_when_the_config_names_no_model(
        open_real: Any, folder: Path) -> None:
    before = packaged_index(open_real, folder)
    kb = open_real(folder)  # no [embedding] model: the index's own model, no mismatch
    assert kb.configured_model == PACKAGED_MODEL_ID
    assert hits(kb) == before  # the same hits, the same scores: the same query vectors
    (folder / "zebra.md").write_text("# Zebras\n\nThe zebras are fed alfalfa twice a day.\n",
                                     encoding="utf-8")
    run = kb.index()  # updated with the packaged file: nothing else re-embedded
    assert (run.added, run.unchanged, run.chunks_embedded) == (1, len(NOTES), 1)
    assert kb.stats().model_id == PACKAGED_MODEL_ID
    assert kb.search("what do zebras eat", limit=1).results[0].path == "zebra.md"
    note = kb.model_note()
    assert note is not None and "recorded by the index" in note and DEFAULT_MODEL_ID in note


def test_status_says_the_model_was_kept_from_the_index(
        open_real: Any, folder: Path, model_cache: Path) -> None:
    from kbmcp_cli.commands import cli

    packaged_index(open_real, folder)
    out = CliRunner().invoke(cli, ["status", "--kb-path", str(folder)])
    assert out.exit_code == 0, out.output
    line = next(x for x in out.output.splitlines() if x.startswith("model:"))
    assert line == (f"model: {PACKAGED_MODEL_ID} (recorded by the index; the default for new "
                    f"indexes is {DEFAULT_MODEL_ID}, which `kb-mcp index --force` re-embeds "
                    "with)")


def test_a_named_model_that_differs_from_the_index_is_a_model_mismatch(
        open_real: Any, folder: Path) -> None:
    packaged_index(open_real, folder)
    named = open_real(folder, embedding_model=INTEGER_MODEL_ID)
    with pytest.raises(ModelMismatch) as caught:
        named.index()
    message = str(caught.value)
    assert PACKAGED_MODEL_ID in message and INTEGER_MODEL_ID in message
    assert "--force" in message


def test_force_rebuilds_with_the_default(open_real: Any, folder: Path) -> None:
    packaged_index(open_real, folder)
    kb = open_real(folder)
    assert kb.configured_model == PACKAGED_MODEL_ID
    run = kb.index(force=True)
    assert run.updated == len(NOTES) and run.chunks_embedded >= len(NOTES)
    assert kb.stats().model_id == INTEGER_MODEL_ID == kb.configured_model
    assert kb.model_note() is None
    assert kb.search("how often are signing keys rotated", limit=1).results[0].path == "keys.md"
    reopened = open_real(folder)  # and from now on the index records the default
    assert reopened.configured_model == INTEGER_MODEL_ID
    assert reopened.index().unchanged == len(NOTES)


def test_a_read_only_replica_uses_the_recorded_model_and_creates_nothing(
        open_real: Any, folder: Path) -> None:
    packaged_index(open_real, folder)
    index_dir = folder / ".kb-mcp"
    listing = sorted(p.relative_to(index_dir) for p in index_dir.rglob("*"))
    replica = open_real(folder, read_only=True)
    assert replica.configured_model == PACKAGED_MODEL_ID
    assert replica.search("when is soup served", limit=1).results[0].path == "lunch.md"
    replica.close()
    assert sorted(p.relative_to(index_dir) for p in index_dir.rglob("*")) == listing


def test_each_collection_keeps_the_model_its_own_index_records(
        tmp_path: Path, model_cache: Path) -> None:
    from kbmcp_adapters.app.collections import open_collections
    from tests.collections_support import TWO_COLLECTIONS

    root = tmp_path / "team"
    for name in ("alpha", "beta"):
        (root / name).mkdir(parents=True)
        for file, text in NOTES.items():
            (root / name / file).write_text(text, encoding="utf-8")
    config = root / "kb-mcp.toml"
    config.write_text(TWO_COLLECTIONS, encoding="utf-8")

    def collections(**values: Any) -> Any:
        return open_collections(build_settings(config, model_cache_dir=model_cache, **values))

    old = collections(embedding_model=PACKAGED_MODEL_ID)  # alpha indexed before 0046
    try:
        assert old.kb("alpha").index().added == len(NOTES)
    finally:
        old.close()
    both = collections()  # the config names no model
    try:
        alpha, beta = both.kb("alpha"), both.kb("beta")
        assert alpha.configured_model == PACKAGED_MODEL_ID
        assert beta.index().added == len(NOTES)  # a new index: the default
        assert beta.stats().model_id == INTEGER_MODEL_ID
        (root / "alpha" / "zebra.md").write_text("# Zebras\n\nZebras eat alfalfa.\n",
                                                 encoding="utf-8")
        assert alpha.index().added == 1  # no mismatch: alpha keeps its packaged file
        assert alpha.stats().model_id == PACKAGED_MODEL_ID
        assert both.kb("alpha").search("what do zebras eat", limit=1).results[0].path == \
            "zebra.md"
    finally:
        both.close()


def test_a_running_server_answers_the_command_line_of_an_index_that_kept_its_model(
        open_real: Any, folder: Path) -> None:
    """`kb-mcp search` hands its query to a running server only when both read the same
    settings (decision 0018): the server's hold the model the index records, the command
    line's (which reads no index) the default, and the two must still be the same set-up."""
    from kbmcp_adapters.local_search.channel import settings_identity

    packaged_index(open_real, folder)
    server = open_real(folder).settings
    command_line = build_settings(None, cwd=folder, kb_path=folder,
                                  model_cache_dir=server.model_cache_dir)
    assert (server.embedding_model, command_line.embedding_model) == (
        PACKAGED_MODEL_ID, DEFAULT_MODEL_ID)
    assert settings_identity(server) == settings_identity(command_line)
    named = build_settings(None, cwd=folder, kb_path=folder, embedding_model=INTEGER_MODEL_ID,
                           model_cache_dir=server.model_cache_dir)
    assert settings_identity(named) != settings_identity(server)


def test_on_postgresql_the_model_comes_from_the_databases_own_meta(
        open_real: Any, folder: Path, pg_url: str, pg_cluster: Any) -> None:
    empty = pg_cluster.new_database()  # no tables yet: nothing recorded, the default
    assert open_real(folder, database_url=empty).configured_model == DEFAULT_MODEL_ID
    old = open_real(folder, database_url=pg_url, embedding_model=PACKAGED_MODEL_ID)
    assert old.index().added == len(NOTES)
    kept = open_real(folder, database_url=pg_url)  # the config names no model
    assert kept.configured_model == PACKAGED_MODEL_ID
    (folder / "zebra.md").write_text("# Zebras\n\nZebras eat alfalfa.\n", encoding="utf-8")
    assert kept.index().added == 1 and kept.stats().model_id == PACKAGED_MODEL_ID


def test_a_callers_minilm_embedder_decides_a_new_indexs_model(folder: Path, embedder: Any) -> None:
    """A library program that hands over its own MiniLM embedder (here the packaged file)
    and names no model: the new index records that model and the knowledge base says so —
    doctor finds no mismatch, a second opening runs the same model."""
    assert embedder.model_id == PACKAGED_MODEL_ID != DEFAULT_MODEL_ID
    settings = build_settings(None, cwd=folder, kb_path=folder)
    kb = KnowledgeBase(bootstrap(settings, embedder=embedder))
    try:
        assert kb.settings.embedding_model == PACKAGED_MODEL_ID
        assert kb.index().added == len(NOTES)
        assert kb.doctor().findings == ()
    finally:
        kb.close()
    again = KnowledgeBase(bootstrap(build_settings(None, cwd=folder, kb_path=folder)))
    try:
        assert again.settings.embedding_model == PACKAGED_MODEL_ID  # kept from the index
    finally:
        again.close()
