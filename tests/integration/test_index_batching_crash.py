"""A writer SIGKILLed inside one of phase one's multi-document transactions (real SQLite):
the batches committed before are whole, nothing of the dying one is left, and the next
run indexes exactly what is missing (ADR 0008, 0017)."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

from kbmcp_adapters.app.bootstrap import bootstrap, settings_for
from kbmcp_adapters.app.knowledge_base import KnowledgeBase
from kbmcp_core.index_run import WRITE_BATCHES
from tests.conftest import write_files
from tests.hashing_embedder import HashingEmbedder

#: Two-chunk notes at batch_size 1: WRITE_BATCHES chunks (PER_BATCH notes) a transaction.
PER_BATCH = WRITE_BATCHES // 2
FILES = 2 * PER_BATCH + 56

#: Indexes with a model-free embedder; in its second write transaction, once the last
#: lexical rows are inserted but before the commit, the process kills itself.
DYING_WRITER = """
import os, signal, sys
from pathlib import Path
from kbmcp_adapters.app.bootstrap import bootstrap, settings_for
from kbmcp_adapters.app.knowledge_base import KnowledgeBase
from tests.hashing_embedder import HashingEmbedder
from kbmcp_adapters.store.sql_store import SqlIndexStore

inserted = SqlIndexStore._insert_many
calls = []

def insert_then_die(self, conn, table, rows, rename=None):
    inserted(self, conn, table, rows, rename)
    calls.append(table)
    if calls.count("fts_grams") == 2:
        os.kill(os.getpid(), signal.SIGKILL)

SqlIndexStore._insert_many = insert_then_die
settings = settings_for(sys.argv[1], Path(sys.argv[2]))
KnowledgeBase(bootstrap(settings, embedder=HashingEmbedder())).index()
"""


def note(i: int) -> str:
    return (f"# Note {i}\n\nnote{i} opens with {'alpha beta ' * 20}\n\n"
            f"## More\n\nnote{i} goes on with {'gamma delta ' * 20}\n")


def counts(db: Path) -> dict[str, int]:
    with sqlite3.connect(db) as conn:
        one = conn.execute
        return {
            "documents": one("SELECT count(*) FROM documents").fetchone()[0],
            "chunks": one("SELECT count(*) FROM chunks").fetchone()[0],
            "short": one("SELECT count(*) FROM documents d WHERE (SELECT count(*) FROM "
                         "chunks c WHERE c.document_id = d.id) != 2").fetchone()[0],
            "words": one("SELECT count(*) FROM fts_words").fetchone()[0],
            "grams": one("SELECT count(*) FROM fts_grams").fetchone()[0],
        }


def test_a_writer_killed_inside_a_batch_leaves_whole_documents_and_is_completed(
    tmp_path: Path,
) -> None:
    kb, config = tmp_path / "kb", tmp_path / "kb-mcp.toml"
    config.write_text("[embedding]\nbatch_size = 1\n")
    write_files(kb, {f"n{i:04d}.md": note(i) for i in range(FILES)})
    repo = str(Path(__file__).resolve().parents[2])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [
        repo, os.environ.get("PYTHONPATH")]))}
    proc = subprocess.run([sys.executable, "-c", DYING_WRITER, str(kb), str(config)],
                          env=env, stdin=subprocess.DEVNULL, capture_output=True,
                          timeout=120, check=False)
    assert proc.returncode == -signal.SIGKILL, proc.stderr.decode(errors="replace")[-2000:]

    after_kill = counts(kb / ".kb-mcp" / "index.db")
    # the first transaction's notes, whole; nothing of the second
    assert after_kill == {"documents": PER_BATCH, "chunks": 2 * PER_BATCH, "short": 0,
                          "words": 2 * PER_BATCH, "grams": 2 * PER_BATCH}

    container = bootstrap(settings_for(kb, config), embedder=HashingEmbedder())
    try:
        summary = KnowledgeBase(container).index()
        assert (summary.added, summary.unchanged) == (FILES - PER_BATCH, PER_BATCH)
        facts = container.store.consistency()
        assert facts.chunk_ids == facts.lexical_ids and not facts.documents_without_chunks
        assert container.store.chunk_ids() == container.vectors.ids()
        hits = container.store.lexical_search("note77", 5)
        assert [container.store.get_chunks([cid])[cid].document_path for cid, _ in hits][:1] \
            == ["n0077.md"]
    finally:
        container.close()
    assert counts(kb / ".kb-mcp" / "index.db") == {
        "documents": FILES, "chunks": 2 * FILES, "short": 0, "words": 2 * FILES,
        "grams": 2 * FILES}
