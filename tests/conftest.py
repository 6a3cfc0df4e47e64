"""Shared fixtures: one real embedding model per test session, and knowledge-base builders."""

from __future__ import annotations

import gc
import os
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, cast

import pytest

from kbmcp_adapters.app.bootstrap import bootstrap
from kbmcp_adapters.app.config import build_settings
from kbmcp_adapters.app.knowledge_base import KnowledgeBase
from kbmcp_adapters.embedding.fastembed_embedder import PACKAGED_MODEL_ID, FastEmbedEmbedder
from kbmcp_core.models import Vector

#: pg_cluster / pg_url: a throwaway PostgreSQL cluster (tests/pg_cluster.py); s3_server: an
#: S3-compatible server on loopback (tests/s3_server.py); the property suite's example counts
#: (tests/hypothesis_counts.py); each test's CPU seconds when KB_TEST_CPU_LOG is set
#: (tests/cpu_log.py); the costliest test files first to the xdist workers (tests/schedule.py)
pytest_plugins = ["tests.pg_cluster", "tests.s3_server", "tests.hypothesis_counts",
                  "tests.cpu_log", "tests.schedule"]


@pytest.hookimpl(trylast=True)
def pytest_collection_finish(session: pytest.Session) -> None:
    """Everything imported so far (the libraries and every test module: some 250,000
    objects) is put out of the cyclic garbage collector's sight (``gc.freeze``)."""
    gc.freeze()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None
                            ) -> Iterator[None]:
    """Once a test file is done (its module fixtures torn down), its garbage is collected
    and what is left (the session's fixtures, the libraries' caches) is frozen too. A full
    collection, one the interpreter starts or one ``kb-mcp index`` asks for in process
    (``model_release``), then scans only what the running file made: over a worker's
    whole heap each took about 0.2 s, a hundred times a worker."""
    yield
    if nextitem is None or nextitem.path != item.path:
        gc.collect()
        gc.freeze()


@pytest.fixture(scope="session", autouse=True)
def _no_user_config_session(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """No developer's own kb-mcp config (``~/.config/kb-mcp``, ``$KB_MCP_CONFIG``) reaches
    the suite, not even through an environment copied by a module-scoped fixture, and
    nothing the suite's runs keep about an index (``app/index_state.py``) lands in the
    developer's ``~/.local/state``."""
    saved = {k: os.environ.get(k) for k in ("XDG_CONFIG_HOME", "KB_MCP_CONFIG",
                                            "XDG_STATE_HOME")}
    os.environ["XDG_CONFIG_HOME"] = str(tmp_path_factory.mktemp("xdg-config"))
    os.environ["XDG_STATE_HOME"] = str(tmp_path_factory.mktemp("xdg-state"))
    os.environ.pop("KB_MCP_CONFIG", None)
    yield
    for key, value in saved.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


@pytest.fixture(scope="session")
def _homes(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The folder every test's ``user_config_home`` and state home are made in."""
    return tmp_path_factory.mktemp("homes")


@pytest.fixture(autouse=True)
def user_config_home(_homes: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Each test's own empty ``$XDG_CONFIG_HOME`` (its user config and trust list live in
    ``<it>/kb-mcp``) and ``$XDG_STATE_HOME`` (what runs keep about an index), and no
    ``$KB_MCP_CONFIG``; subprocesses inherit them.

    Made with ``mkdtemp`` inside one session folder (``_homes``), not with
    ``tmp_path_factory.mktemp``: that one lists the whole base temp folder to number each
    new folder, and with two of them a test besides ``tmp_path`` a worker's thousand tests
    listed some three thousand entries each time (decision 0061)."""
    home = Path(tempfile.mkdtemp(prefix="config-home-", dir=_homes))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home))
    monkeypatch.setenv("XDG_STATE_HOME", tempfile.mkdtemp(prefix="state-home-", dir=_homes))
    monkeypatch.delenv("KB_MCP_CONFIG", raising=False)
    return home


@pytest.fixture(scope="session")
def model_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The run's model cache, one for every xdist worker: the default model's integer copy
    is made once per run, not once per worker and per cache. ``<it>/../xdg`` (the
    ``$XDG_CACHE_HOME`` of subprocesses and of in-process CLI runs) holds the same folder
    under ``kb-mcp/models``. Tests only read it: one that damages a copy or wants a cold
    cache makes its own."""
    from filelock import FileLock

    from kbmcp_adapters.embedding.fastembed_embedder import INTEGER_MODEL_ID

    root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER") is not None:
        root = root.parent  # the run's folder, above each worker's own
    cache, made = root / "model-cache", root / "model-cache.made"
    with FileLock(f"{cache}.lock", timeout=600):
        if not made.exists():
            cache.mkdir(exist_ok=True)
            FastEmbedEmbedder(INTEGER_MODEL_ID, cache_dir=cache)._resolve_minilm()
            xdg = root / "xdg" / "kb-mcp"
            xdg.mkdir(parents=True, exist_ok=True)
            if not (xdg / "models").is_symlink():
                (xdg / "models").symlink_to(cache, target_is_directory=True)
            made.touch()
    return cache


class RememberingEmbedder(FastEmbedEmbedder):
    """The packaged MiniLM file, each text embedded once per session.

    That file embeds one text per model run, so a vector is a function of its text alone,
    bit for bit (``FastEmbedEmbedder._embed_pooled``): a text met again, in another test's
    copy of the same corpus, is given the vector it got the first time instead of running
    the model again. Stored as float32, which holds the model's values exactly."""

    def __init__(self, model: str, cache_dir: Path) -> None:
        super().__init__(model, cache_dir=cache_dir)
        self._documents: dict[str, Any] = {}
        self._queries: dict[str, Any] = {}

    def embed_documents(self, texts: Sequence[str]) -> list[Vector]:
        new = [t for t in dict.fromkeys(texts) if t not in self._documents]
        if new:
            for text, vector in zip(new, super().embed_documents(new), strict=True):
                self._documents[text] = _exact_float32(vector)
        return [self._documents[t].tolist() for t in texts]

    def embed_query(self, text: str) -> Vector:
        got = self._queries.get(text)
        if got is None:
            got = self._queries[text] = _exact_float32(super().embed_query(text))
        return cast(Vector, got.tolist())


def _exact_float32(vector: Vector) -> Any:
    import numpy as np

    kept = np.asarray(vector, dtype=np.float32)
    assert kept.astype(np.float64).tolist() == list(vector), "not a float32 vector"
    return kept


@pytest.fixture(scope="session")
def embedder(model_cache: Path) -> FastEmbedEmbedder:
    """The packaged MiniLM file, loaded once for the whole session: the default model until
    decision 0046 (the in-process tests' expected rankings were measured with it; the new
    default, its integer copy, is what `kb-mcp` subprocesses run unless a test names one).
    Each text is embedded once in the session (``RememberingEmbedder``)."""
    return RememberingEmbedder(PACKAGED_MODEL_ID, cache_dir=model_cache)


def write_files(root: Path, files: Mapping[str, str | bytes]) -> None:
    for rel, content in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            p.write_bytes(content)
        else:
            p.write_text(content, encoding="utf-8")


OpenKb = Callable[..., KnowledgeBase]


@pytest.fixture
def open_kb(embedder: FastEmbedEmbedder) -> Iterator[OpenKb]:
    """Open a KnowledgeBase on a folder with the shared real embedder."""
    opened: list[KnowledgeBase] = []

    def _open(kb_path: Path, **settings: Any) -> KnowledgeBase:
        s = build_settings(None, cwd=kb_path, kb_path=kb_path, **settings)
        kb = KnowledgeBase(bootstrap(s, embedder=embedder))
        opened.append(kb)
        return kb

    yield _open
    for kb in opened:
        kb.close()


@pytest.fixture
def kb_env(model_cache: Path) -> dict[str, str]:
    """Environment for `kb-mcp` subprocesses: offline, the session's model cache."""
    env = dict(os.environ)
    env.update({"HF_HUB_OFFLINE": "1", "XDG_CACHE_HOME": str(model_cache.parent / "xdg"),
                "PYTHONUNBUFFERED": "1"})
    return env


def make_big_pdf(path: Path, pages: int = 150) -> None:
    """A PDF over 2 MiB on disk with over 1 MiB of text. Every page is alike and one
    outline entry covers them all, so the model embeds only a handful of distinct chunks."""
    import pymupdf

    path.parent.mkdir(parents=True, exist_ok=True)
    doc = pymupdf.open()
    line = "Telemetry appendix row with sensor readings and calibration notes. " * 2
    text = "\n".join(f"{i} {line}" for i in range(60))
    for _ in range(pages):
        page = doc.new_page()
        page.insert_textbox(page.rect + (36, 36, -36, -36), text, fontsize=6)
    doc.set_toc([[1, "Telemetry appendix", 1]])
    doc.embfile_add("raw-readings.bin", os.urandom(2 * 1024 * 1024))
    doc.save(path)
    doc.close()
