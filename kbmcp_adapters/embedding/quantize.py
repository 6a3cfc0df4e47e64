"""The default model with integer matrix products: made once from the packaged file, cached.

The packaged all-MiniLM-L6-v2 file stores int8 weights but casts them back to float before
every matrix product, so it runs at float speed. onnxruntime's own tools rewrite it once,
on this machine: ``quant_pre_process`` folds the casts into float weights, then
``quantize_dynamic`` (per output channel, int8 weights, activations quantized per batch)
turns each weight product into ``MatMulInteger``. Both steps are deterministic: the same
packaged file and library versions give the same bytes.

The result sits in the model cache next to a stamp (JSON) naming its sha256, the packaged
file it came from, the recipe and the onnxruntime version. A copy whose bytes, source,
recipe or runtime differ from its stamp is rebuilt, never used. Its bytes are hashed once,
not by every process that opens it: after a hash that matched, ``<copy>.checked`` keeps
the file's stat (device, inode, size, modification and change times in nanoseconds) with
the digest, and a later run that finds the same stat skips the 58 MB sha256. A write to the
file moves its change time (which no tool sets back), and a stat is kept only for a file
last changed before the check began, so a change at any later moment is a different stat
and is hashed (decision 0057, addendum of session 17). Any failure is raised to
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
_CHECKED_SUFFIX = ".checked"
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
    digest = stamp.get("sha256")
    return isinstance(digest, str) and _hashes_to(target, digest)


def _hashes_to(target: Path, digest: str) -> bool:
    """Whether ``target`` hashes to ``digest``: answered from ``<target>.checked`` when
    the file's stat is the one a matching hash left there, else hashed (and, when it
    matches and the file did not change since before the hash began, the stat kept)."""
    checked = target.with_name(target.name + _CHECKED_SUFFIX)
    try:
        if checked.read_text(encoding="ascii") == f"{digest} {_stat_of(target)}":
            return True
    except (OSError, UnicodeDecodeError):
        pass
    part = checked.with_name(f".{checked.name}.{os.getpid()}.{threading.get_ident()}.part")
    try:  # its modification time: a clock reading of the file system's own, before hashing
        part.write_text("", encoding="ascii")
        began = part.stat().st_mtime_ns
    except OSError:
        return _sha256(target) == digest
    try:
        before = os.stat(target)
        if _sha256(target) != digest:
            return False
        if before.st_ctime_ns < began and _stat_of(target) == _of(before):
            part.write_text(f"{digest} {_of(before)}", encoding="ascii")
            os.replace(part, checked)
        return True
    except OSError:
        return False
    finally:
        part.unlink(missing_ok=True)


def _stat_of(path: Path) -> str:
    return _of(os.stat(path))


def _of(st: os.stat_result) -> str:
    return f"{st.st_dev}:{st.st_ino}:{st.st_size}:{st.st_mtime_ns}:{st.st_ctime_ns}"


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
