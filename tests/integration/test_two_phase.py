"""Two phases per run with the real stores and the real `kb-mcp` process (ADR 0017):
the whole folder is keyword-searchable before phase two, a run SIGKILLed between the
phases is completed by embedding exactly what it left, and progress shows both phases."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from kbmcp_adapters.app.bootstrap import bootstrap, settings_for
from tests.conftest import write_files
from tests.slow_service import slow_embedding_config

KB_MCP = [sys.executable, "-m", "kbmcp_cli"]

#: A writer whose phase two never ends: it says so in a file, then waits to be killed.
STALLED_WRITER = """
import sys, threading
from pathlib import Path
from benchmarks.standin import HashEmbedder
from kbmcp_adapters.app.bootstrap import bootstrap, real_embedder, settings_for
from kbmcp_adapters.app.knowledge_base import KnowledgeBase

class Stalled(HashEmbedder):
    def embed_documents(self, texts):
        Path(sys.argv[2]).write_text(str(len(texts)))
        threading.Event().wait()

settings = settings_for(sys.argv[1], Path(sys.argv[3]))
KnowledgeBase(bootstrap(settings, embedder=Stalled(real_embedder(settings)))).index()
"""


def note(i: int, extra: str = "") -> str:
    return (f"---\ntitle: Note {i}\n---\n# Note {i}\n\nNote {i} is about {code(i)}.{extra} "
            f"{'alpha beta gamma delta ' * 30}\n\n"
            f"## Details\n\nMore about note {i}: {'lorem ipsum dolor sit ' * 30}\n")


def code(i: int) -> str:
    """A word only note ``i`` holds."""
    return "qx" + "".join("abcdefghij"[int(d)] for d in f"{i:03d}")


def cli(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*KB_MCP, *args], env=env, capture_output=True, text=True,
                          timeout=300, stdin=subprocess.DEVNULL)


def missing_vectors(kb: Path, config: Path) -> int:
    container = bootstrap(settings_for(kb, config))
    try:
        store = container.open_store()
        return len(store.chunk_ids() - container.vectors.ids())
    finally:
        container.close()


def wait_for(path: Path, proc: subprocess.Popen[bytes], seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while not path.exists():
        assert proc.poll() is None, "the writer ended before its phase two"
        assert time.monotonic() < deadline, "phase two never started"
        time.sleep(0.05)


@pytest.fixture()
def config(tmp_path: Path) -> Iterator[Path]:
    """A kb-mcp.toml whose vectors come from a hashing service on loopback, 4 texts a
    request: what is asserted is which chunks get vectors and when, not the vectors, so no
    process of these tests loads the packaged model (tests/slow_service.py)."""
    path = tmp_path / "kb-mcp.toml"
    with slow_embedding_config(path, delay_s=0.0, batch_size=4):
        yield path


def test_killed_between_phases_every_file_is_found_and_the_next_run_embeds_the_rest(
    tmp_path: Path, kb_env: dict[str, str], config: Path
) -> None:
    kb = tmp_path / "kb"
    at = ["--kb-path", str(kb), "--config", str(config)]
    write_files(kb, {f"old/n{i:03d}.md": note(i) for i in range(6)})
    first = cli(["index", *at, "--quiet"], kb_env)
    assert first.returncode == 0, first.stderr
    # 20 new files and one edited section of an indexed one
    write_files(kb, {f"new/n{i:03d}.md": note(i) for i in range(100, 120)})
    write_files(kb, {"old/n002.md": note(2, " It changed.")})

    marker = tmp_path / "phase-two-started"
    env = {**kb_env, "PYTHONPATH": os.pathsep.join(filter(None, [
        str(Path(__file__).resolve().parents[2]), kb_env.get("PYTHONPATH")]))}
    proc = subprocess.Popen([sys.executable, "-c", STALLED_WRITER, str(kb), str(marker),
                             str(config)],
                            env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    try:
        wait_for(marker, proc, 120)
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.kill()
        _, err = proc.communicate(timeout=30)
    assert proc.returncode == -signal.SIGKILL, err.decode(errors="replace")[-2000:]

    for i in (2, 119):  # the edited file and the last new one, through the CLI
        r = cli(["search", code(i), *at, "--mode", "lexical", "--format", "json"], kb_env)
        assert r.returncode == 0, r.stderr
        assert [h["path"] for h in json.loads(r.stdout)["results"]][:1] == [
            f"{'old' if i < 100 else 'new'}/n{i:03d}.md"]
    container = bootstrap(settings_for(kb, config))
    try:
        store = container.open_store()
        found = {i: {store.get_chunks([cid])[cid].document_path
                     for cid, _ in store.lexical_search(code(i), 5)}
                 for i in [*range(6), *range(100, 120)]}
    finally:
        container.close()
    assert all(len(paths) == 1 for paths in found.values()), found  # every file, by keywords
    left = missing_vectors(kb, config)
    assert left == 20 * 2 + 1  # two chunks per new file, the edited section; the rest reused
    r = cli(["search", "lorem ipsum", *at, "--format", "json"], kb_env)
    assert f"{left} chunks are searchable by keywords only" in json.loads(r.stdout)["notice"]

    r = cli(["index", *at, "--format", "json"], kb_env)
    assert r.returncode == 0, r.stderr
    summary = json.loads(r.stdout)
    assert summary["chunks_embedded"] == left and summary["added"] == 0
    assert missing_vectors(kb, config) == 0
    r = cli(["search", "lorem ipsum", *at, "--format", "json"], kb_env)
    assert "notice" not in json.loads(r.stdout)


def test_index_progress_shows_the_text_phase_then_the_vector_phase(
    tmp_path: Path, kb_env: dict[str, str], config: Path
) -> None:
    kb = tmp_path / "kb"
    write_files(kb, {f"n{i:03d}.md": note(i) for i in range(12)})
    # stderr is a pipe: plain lines
    r = cli(["index", "--kb-path", str(kb), "--config", str(config)], kb_env)
    assert r.returncode == 0, r.stderr
    lines = r.stderr.splitlines()
    done_text = lines.index("kb-mcp: indexing: text 12/12 files")
    searchable = lines.index("kb-mcp: every file is now searchable by keywords")
    first_vectors = lines.index("kb-mcp: indexing: text 12/12 files · vectors 0/24 chunks")
    last_vectors = lines.index("kb-mcp: indexing: text 12/12 files · vectors 24/24 chunks")
    assert done_text < searchable < first_vectors < last_vectors
