"""``kb-mcp watch`` over several collections, as a user runs it: every collection indexed,
then followed by its own watcher; a change in one is indexed there and nowhere else."""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from kbmcp_adapters.app.bootstrap import settings_for
from kbmcp_adapters.app.collections import open_collections
from kbmcp_adapters.app.knowledge_base import KnowledgeBase
from kbmcp_adapters.embedding.fastembed_embedder import FastEmbedEmbedder
from kbmcp_adapters.live.watch_status import read_status
from tests.collections_support import TWO_COLLECTIONS
from tests.conftest import write_files
from tests.e2e.conftest import DEADLINE, Env, LineReader, kb_mcp_command, stop
from tests.e2e.test_watch_cmd import eventually
from tests.store_faults import no_traceback

CONFIG = TWO_COLLECTIONS

Reader = Callable[[str], KnowledgeBase]


@pytest.fixture
def team(tmp_path: Path) -> Path:
    root = tmp_path / "team"
    write_files(root / "alpha", {"keys.md": "# Keys\n\nRotate the vault signing keys.\n"})
    write_files(root / "beta", {"garden.md": "# Garden\n\nTomatoes need staking in June.\n"})
    (root / "kb-mcp.toml").write_text(CONFIG, encoding="utf-8")
    return root / "kb-mcp.toml"


@pytest.fixture
def reader(team: Path, embedder: FastEmbedEmbedder) -> Iterator[Reader]:
    """A fresh library reader of one collection per look (it sees the latest commit)."""
    opened = []

    def open_reader(name: str) -> KnowledgeBase:
        collections = open_collections(settings_for(None, team), embedder=embedder)
        opened.append(collections)
        return collections.kb(name)

    yield open_reader
    for collections in opened:
        collections.close()


def _status(team: Path, name: str) -> dict[str, object]:
    """What collection ``name``'s watcher last wrote in its own index folder."""
    return read_status(team.parent / ".kb-mcp" / "collections" / name) or {}


def test_watch_follows_each_collection_and_a_change_reaches_only_its_own(
    team: Path, server_env: Env, reader: Reader
) -> None:
    proc = subprocess.Popen([*kb_mcp_command(), "watch", "--config", str(team)],
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env={**os.environ, **server_env})
    assert proc.stderr is not None and proc.stdout is not None
    err = LineReader(proc.stderr)
    try:
        err.wait_for(r"watching collection alpha .* for changes", DEADLINE)
        err.wait_for(r"watching collection beta .* for changes", DEADLINE)

        def paths(name: str, query: str) -> set[str]:
            return {h.path for h in reader(name).search(query, limit=10).results}

        # both were indexed at start, each into its own index
        assert reader("alpha").indexed_paths() == ["keys.md"]
        assert reader("beta").indexed_paths() == ["garden.md"]
        # each watcher reconciled once at start; after that beta has no reason to run
        eventually(lambda: bool(_status(team, "alpha").get("last_reconcile"))
                   and bool(_status(team, "beta").get("last_reconcile")),
                   "both watchers reconciled at start")
        beta_run = reader("beta").stats().last_run

        write_files(team.parent / "alpha", {"soup.md": "# Soup\n\nSimmer the leek stock.\n"})
        eventually(lambda: "soup.md" in paths("alpha", "leek stock simmer"),
                   "the new file is searchable in its collection")
        err.wait_for(r"collection alpha synced: ", DEADLINE)
        assert "soup.md" not in paths("beta", "leek stock simmer")
        assert reader("beta").indexed_paths() == ["garden.md"]
        assert reader("beta").stats().last_run == beta_run  # beta was not re-indexed

        # and the other way round
        write_files(team.parent / "beta", {"basil.md": "# Basil\n\nBasil likes the sun.\n"})
        eventually(lambda: "basil.md" in reader("beta").indexed_paths(),
                   "the new file is indexed in beta")
        assert reader("alpha").indexed_paths() == ["keys.md", "soup.md"]

        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
        assert proc.stdout.read() == ""
    finally:
        stop(proc)
        proc.stdout.close()
    logged = err.drain()
    no_traceback(logged)
    for name in ("alpha", "beta"):
        assert _status(team, name).get("alive") is False, name
