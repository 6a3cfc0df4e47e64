"""``kb-mcp/all-MiniLM-L6-v2-int8-dynamic`` (the default since decision 0046): the packaged
model's file rewritten once to integer matrix products, checked and cached; never mixed with
the packaged file in one index."""

from __future__ import annotations

import json
import math
import os
import shutil
from collections.abc import Sequence
from pathlib import Path

import pytest

from kbmcp_adapters.app.bootstrap import bootstrap
from kbmcp_adapters.app.config import build_settings
from kbmcp_adapters.app.knowledge_base import KnowledgeBase
from kbmcp_adapters.embedding import quantize
from kbmcp_adapters.embedding.fastembed_embedder import (
    INTEGER_MODEL_ID,
    PACKAGED_MODEL_ID,
    FastEmbedEmbedder,
)
from kbmcp_core.errors import EmbeddingUnavailable, ModelMismatch

FOLDER = "kb-mcp--all-MiniLM-L6-v2-int8"
STAMP = quantize.QUANTIZED_FILE + ".stamp.json"
TEXTS = ["a cat", "a small kitten", "quarterly revenue"]


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    return dot / (math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b)))


def operators(path: Path) -> set[str]:
    import onnx

    return {node.op_type for node in onnx.load(str(path)).graph.node}


@pytest.fixture(scope="module")
def integer(tmp_path_factory: pytest.TempPathFactory) -> tuple[FastEmbedEmbedder, Path]:
    """The integer model on a module-wide cache (its copy is made once here)."""
    cache = tmp_path_factory.mktemp("models")
    return FastEmbedEmbedder(INTEGER_MODEL_ID, cache_dir=cache), cache


def test_it_runs_an_integer_copy_made_once_and_stamped(
        integer: tuple[FastEmbedEmbedder, Path], embedder: FastEmbedEmbedder) -> None:
    model, cache = integer
    assert model.model_id == INTEGER_MODEL_ID
    cat, kitten, revenue = model.embed_documents(TEXTS)
    folder = cache / FOLDER
    copy = folder / quantize.QUANTIZED_FILE
    ops = operators(copy)
    assert "MatMulInteger" in ops and "DynamicQuantizeLinear" in ops
    assert "MatMulInteger" not in operators(folder / "model.onnx")  # the packaged file
    stamp = json.loads((folder / STAMP).read_text(encoding="utf-8"))
    assert stamp["sha256"] == quantize._sha256(copy)  # noqa: SLF001
    assert stamp["recipe"] == quantize.RECIPE
    # still the same model: paraphrase above an unrelated text, close to the packaged file
    assert cosine(cat, kitten) > cosine(cat, revenue) + 0.3
    for ours, theirs in zip((cat, kitten, revenue), embedder.embed_documents(TEXTS),
                            strict=True):
        assert cosine(ours, theirs) > 0.98
    # one text per run: a document's vector is its query's, whatever it was batched with
    assert cosine(model.embed_query("a cat"), cat) == pytest.approx(1.0, abs=1e-6)


def test_a_damaged_copy_is_rebuilt_to_the_same_bytes(
        integer: tuple[FastEmbedEmbedder, Path], tmp_path: Path) -> None:
    model, cache = integer
    model.embed_query("made")  # the module's copy exists
    folder = tmp_path / FOLDER
    shutil.copytree(cache / FOLDER, folder, symlinks=True)
    copy = folder / quantize.QUANTIZED_FILE
    good = quantize._sha256(copy)  # noqa: SLF001
    data = bytearray(copy.read_bytes())
    data[len(data) // 2] ^= 0xFF
    copy.write_bytes(bytes(data))

    vector = FastEmbedEmbedder(INTEGER_MODEL_ID, cache_dir=tmp_path).embed_query("still works")

    assert len(vector) == 384
    assert quantize._sha256(copy) == good  # noqa: SLF001  deterministic: the same bytes again


def test_a_copy_that_cannot_be_made_falls_back_to_the_packaged_file_under_its_name(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("quantizer exploded")

    monkeypatch.setattr("onnxruntime.quantization.shape_inference.quant_pre_process", broken)
    fresh = FastEmbedEmbedder(INTEGER_MODEL_ID, cache_dir=tmp_path)
    vector = fresh.embed_query("a cat")  # loads first: nothing was told yet, so it falls back
    assert fresh.model_id == PACKAGED_MODEL_ID and len(vector) == 384
    assert "quantizer exploded" in caplog.text and PACKAGED_MODEL_ID in caplog.text
    # the failure is remembered: the next process names the packaged file from the start
    assert FastEmbedEmbedder(INTEGER_MODEL_ID, cache_dir=tmp_path).model_id == PACKAGED_MODEL_ID

    # one that already gave out its identity fails rather than mix vectors
    told = FastEmbedEmbedder(INTEGER_MODEL_ID, cache_dir=tmp_path / "other")
    assert told.model_id == INTEGER_MODEL_ID
    with pytest.raises(EmbeddingUnavailable, match="integer copy could not be made"):
        told.embed_query("a cat")
    later = FastEmbedEmbedder(INTEGER_MODEL_ID, cache_dir=tmp_path / "other")
    assert later.model_id == PACKAGED_MODEL_ID


def test_an_index_of_the_packaged_file_is_another_model(
        tmp_path: Path, integer: tuple[FastEmbedEmbedder, Path],
        embedder: FastEmbedEmbedder) -> None:
    kb_path = tmp_path / "kb"
    kb_path.mkdir()
    (kb_path / "a.md").write_text("# Keys\n\nRotate the signing keys every 90 days.\n",
                                  encoding="utf-8")

    def open_with(model: FastEmbedEmbedder) -> KnowledgeBase:
        settings = build_settings(None, cwd=kb_path, kb_path=kb_path,
                                  embedding_model=model.model_id)
        return KnowledgeBase(bootstrap(settings, embedder=model))

    old = open_with(embedder)  # the packaged file (the default until 0046)
    try:
        assert old.index().added == 1
    finally:
        old.close()
    kb = open_with(integer[0])
    try:
        with pytest.raises(ModelMismatch) as caught:
            kb.index()
        assert PACKAGED_MODEL_ID in str(caught.value) and INTEGER_MODEL_ID in str(caught.value)
        rebuilt = kb.index(force=True)
        assert rebuilt.updated == 1 and rebuilt.chunks_embedded >= 1  # re-embedded, not reused
        assert kb.stats().model_id == INTEGER_MODEL_ID
    finally:
        kb.close()


def test_the_integer_copy_embeds_several_texts_at_once_with_the_same_vectors(
        integer: tuple[FastEmbedEmbedder, Path]) -> None:
    """Documents run one text per model run on one-thread sessions, several at once (the
    packaged file's route since 0044; the default's since 0046): each vector is bit for bit
    what one text on the session with every thread gives, which is also its query's."""
    model, cache = integer
    texts = ["a cat", "", "Rotate the signing keys every ninety days. " * 30,
             "| a | b |\n|---|---|\n| 1 | 2 |", "```sh\nkb-mcp index --force\n```",
             "鍵は九十日ごとに更新します", "quarterly revenue grew", "word " * 400]
    pooled = model.embed_documents(texts)
    assert model._pool_model is not None  # noqa: SLF001  the pooled route ran
    alone = FastEmbedEmbedder(INTEGER_MODEL_ID, cache_dir=cache, text_pool=False)
    assert alone.embed_documents(texts) == pooled
    assert [model.embed_query(t) for t in texts[:3]] == pooled[:3]


def _stamped_copy(folder: Path, data: bytes) -> Path:
    """A stand-in copy (its own bytes, not the model's) with a stamp naming them."""
    folder.mkdir(parents=True, exist_ok=True)
    copy = folder / quantize.QUANTIZED_FILE
    copy.write_bytes(data)
    stamp = {**quantize._expected_stamp("source"), "sha256": quantize._sha256(copy)}  # noqa: SLF001
    (folder / STAMP).write_text(json.dumps(stamp), encoding="utf-8")
    return copy


def _until_the_file_clock_passes(changed: Path) -> None:
    """Wait (on a condition, with a deadline) until a file written now has a later change
    time than ``changed``: file times advance by the kernel's tick."""
    probe = changed.with_name("probe")
    for _ in range(100_000):
        probe.write_bytes(b"")
        if probe.stat().st_ctime_ns > changed.stat().st_ctime_ns:
            probe.unlink()
            return
    raise AssertionError("the file system's clock did not move")


def test_a_copy_hashed_once_is_not_hashed_again_until_it_changes(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A fresh search skips the integer copy's 58 MB sha256 when the file is the one a
    matching hash saw (same device, inode, size, modification and change times); bytes
    changed in place, even with the same size and the old modification time, are caught."""
    copy = _stamped_copy(tmp_path, b"integer weights " * 4096)
    _until_the_file_clock_passes(copy)
    hashed: list[str] = []
    real = quantize._sha256  # noqa: SLF001

    def spy(path: Path) -> str:
        hashed.append(path.name)
        return real(path)

    monkeypatch.setattr(quantize, "_sha256", spy)

    assert quantize.intact(copy, "source")
    assert quantize.intact(copy, "source")  # another process: the same file, not hashed
    assert hashed == [quantize.QUANTIZED_FILE]

    seen = copy.stat()
    data = bytearray(copy.read_bytes())
    data[100] ^= 0xFF
    copy.write_bytes(bytes(data))  # the same size
    os.utime(copy, ns=(seen.st_atime_ns, seen.st_mtime_ns))  # and the old modification time
    assert not quantize.intact(copy, "source")
    assert not quantize.intact(copy, "source")
    assert hashed == [quantize.QUANTIZED_FILE] * 3

