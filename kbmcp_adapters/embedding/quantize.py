"""The default model with integer matrix products: made once from the packaged file, cached.

The packaged all-MiniLM-L6-v2 file stores int8 weights but casts them back to float before
every matrix product, so it runs at float speed. onnxruntime's own tools rewrite it once,
on this machine: ``quant_pre_process`` folds the casts into float weights, then
``quantize_dynamic`` (per output channel, int8 weights, activations quantized per batch)
turns each weight product into ``MatMulInteger``. Both steps are deterministic: the same
packaged file and library versions give the same bytes.

The result sits in the model cache next to a stamp (JSON) naming its sha256, the packaged
file it came from, the recipe and the onnxruntime version. A copy whose bytes, source,
recipe or runtime differ from its stamp is rebuilt, never used. Any failure is raised to
the caller (``fastembed_embedder``), which records it here (``mark_failed``) so that later
runs use the packaged file under its own name from the start (``usable``).
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import json
import os
import shutil
import tempfile
import threading
from pathlib import Path
from typing import Any

__all__ = ["QUANTIZED_FILE", "RECIPE", "intact", "mark_failed", "quantized_copy", "usable"]

#: The file name of the quantized copy inside the assembled model folder.
QUANTIZED_FILE = "model.int8-dynamic.onnx"
#: Bumped whenever the steps below change: an older copy is then rebuilt.
RECIPE = "quant_pre_process+quantize_dynamic(MatMul, per_channel, QInt8) v1"
_STAMP_SUFFIX = ".stamp.json"
_FAILED_SUFFIX = ".failed.json"
_build_lock = threading.Lock()


def quantized_copy(source: Path, source_sha256: str, folder: Path) -> Path:
    """The quantized copy of ``source`` (already checked against ``source_sha256``) in
    ``folder``: reused when its stamp and bytes agree, built otherwise. Raises on failure."""
    target = folder / QUANTIZED_FILE
    if intact(target, source_sha256):
        return target
    with _build_lock:  # one build per process; other processes replace atomically
        if intact(target, source_sha256):
            return target
        _build(source, source_sha256, folder, target)
    return target


def usable(folder: Path, source_sha256: str) -> bool:
    """Whether a quantized copy can be expected here, answered without loading anything:
    the quantization tools are installed and no earlier attempt with this source, recipe
    and runtime failed in ``folder``."""
    if importlib.util.find_spec("onnx") is None or \
            importlib.util.find_spec("onnxruntime") is None:
        return False
    failed = folder / (QUANTIZED_FILE + _FAILED_SUFFIX)
    try:
        record = json.loads(failed.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return True
    expected = _expected_stamp(source_sha256)
    return not (isinstance(record, dict)
                and all(record.get(k) == v for k, v in expected.items()))


def mark_failed(folder: Path, source_sha256: str, reason: str) -> None:
    """Remember (best effort) that the copy cannot be made here, and why."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        record = {**_expected_stamp(source_sha256), "reason": reason}
        (folder / (QUANTIZED_FILE + _FAILED_SUFFIX)).write_text(json.dumps(record, indent=1),
                                                                encoding="utf-8")
    except OSError:
        pass


def _expected_stamp(source_sha256: str) -> dict[str, Any]:
    try:
        runtime = importlib.metadata.version("onnxruntime")
    except importlib.metadata.PackageNotFoundError:
        runtime = None
    return {"recipe": RECIPE, "source_sha256": source_sha256, "onnxruntime": runtime}


def intact(target: Path, source_sha256: str) -> bool:
    """Whether ``target`` exists, its stamp matches this source, recipe and runtime, and
    its bytes hash to the stamp's sha256."""
    stamp_path = target.with_name(target.name + _STAMP_SUFFIX)
    try:
        stamp = json.loads(stamp_path.read_text(encoding="utf-8"))
        if not isinstance(stamp, dict) or not target.is_file():
            return False
    except (OSError, ValueError):
        return False
    expected = _expected_stamp(source_sha256)
    if any(stamp.get(key) != value for key, value in expected.items()):
        return False
    return bool(stamp.get("sha256") == _sha256(target))


def _build(source: Path, source_sha256: str, folder: Path, target: Path) -> None:
    from onnxruntime.quantization import QuantType, quantize_dynamic
    from onnxruntime.quantization.shape_inference import quant_pre_process

    folder.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=".quantize-", dir=folder))
    try:
        folded, quantized = work / "folded.onnx", work / "quantized.onnx"
        # folds the weights' cast-and-scale into float constants (onnxruntime's basic
        # graph optimisation) and marks the model as pre-processed
        quant_pre_process(str(source), str(folded), skip_symbolic_shape=True)
        quantize_dynamic(folded, quantized, per_channel=True, weight_type=QuantType.QInt8,
                         op_types_to_quantize=["MatMul"])
        stamp = {**_expected_stamp(source_sha256), "sha256": _sha256(quantized)}
        staged_stamp = work / "stamp.json"
        staged_stamp.write_text(json.dumps(stamp, indent=1), encoding="utf-8")
        os.replace(quantized, target)
        os.replace(staged_stamp, target.with_name(target.name + _STAMP_SUFFIX))
        (folder / (QUANTIZED_FILE + _FAILED_SUFFIX)).unlink(missing_ok=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
