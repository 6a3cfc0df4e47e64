"""Document frequencies from FTS5's vocabulary tables (issue 14, item 1): the index carries
them, and keyword search ranks exactly as it did when it read every posting."""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path

from sqlalchemy import text

from kbmcp_adapters.store import ranking
from kbmcp_adapters.store.lexical import compile_query
from kbmcp_adapters.store.sql_store import SqlIndexStore
from kbmcp_core.models import ChunkRecord, DocumentRecord

TEXTS = [
    "Configure the deployment service before running the runner",
    "configuration of services; the runner runs deployments",
    "Café naïve résumé: the Ärger of a deploy",
    "cafe naive resume, deployed by the service runner",
    "東京の天気は晴れです。configuration files live here",
    "京都の天気と東京の天気",
    "ledger lantern harbor compass orchard beacon",
    "the lantern and the harbor and the ledger",
    "lantern lantern lantern",
    "a harbor without a lantern",
]
QUERIES = [
    "how do we configure the deployment service",
    '"the runner" deployments services',
    "cafe naive resume deploy",
    "Café Ärger résumé",
    "東京の天気",
    "天気 configuration",
    "lantern harbor ledger beacon",
    "running runners ran",
    "harbor lantern",
    '"lantern harbor" compass',
]


def _write(store: SqlIndexStore) -> None:
    cid = 1
    for d in range(40):
        body = TEXTS[d % len(TEXTS)] + f" {d}"
        doc = DocumentRecord(path=f"d/{d:03d}.md", title=f"Note {d} {TEXTS[(d * 3) % 10][:12]}",
                             content_hash=str(d), size_bytes=1, date=None, topic=None,
                             category=None, tags=(), metadata={}, last_indexed="x")
        chunks = [ChunkRecord(cid + o, o, "Heading", ("Heading",), f"{body} part {o}",
                              hashlib.sha256(f"{d}{o}".encode()).hexdigest(), 1, 1, None)
                  for o in range(2)]
        cid += 2
        store.write_document(doc, chunks)
    # deleted rows leave no trace in the counts
    store.delete_documents([f"d/{d:03d}.md" for d in range(0, 40, 3)])


def test_an_index_at_head_has_a_vocabulary_table_for_each_fts5_table(tmp_path: Path) -> None:
    db = tmp_path / "index.db"
    SqlIndexStore(f"sqlite:///{db}", create=True).close()
    with sqlite3.connect(db) as conn:
        names = {n for (n,) in conn.execute("SELECT name FROM sqlite_master")}
    assert {"fts_words_vocab", "fts_grams_vocab"} <= names


def test_coverage_from_the_vocabulary_equals_coverage_from_the_postings(tmp_path: Path) -> None:
    with SqlIndexStore(f"sqlite:///{tmp_path / 'index.db'}", create=True) as store:
        _write(store)
        compared = 0
        with store._engine.connect() as conn:  # noqa: SLF001 - the two legs side by side
            total = int(conn.execute(text("SELECT count(*) FROM chunks")).scalar_one())
            for query in QUERIES:
                c = compile_query(query)
                for table, expression, plain, quoted in (
                    ("fts_words", c.words, c.word_coverage, c.word_terms),
                    ("fts_grams", c.grams, c.gram_coverage, c.gram_terms),
                ):
                    if not expression or len(plain) < 2:
                        continue
                    leg = ranking._fts_leg(conn, table, expression, 50, None)  # noqa: SLF001
                    if not leg:
                        continue
                    via_vocabulary = ranking._weigh_by_coverage(  # noqa: SLF001
                        conn, table, plain, leg)
                    via_postings = ranking._weigh_by_postings(  # noqa: SLF001
                        conn, table, quoted, leg, total)
                    assert via_vocabulary == via_postings, (query, table)
                    compared += 1
        assert compared >= 12


def test_keyword_search_ranks_the_same_with_and_without_the_vocabulary(tmp_path: Path) -> None:
    db = tmp_path / "index.db"
    with SqlIndexStore(f"sqlite:///{db}", create=True) as store:
        _write(store)
        with_vocabulary = {q: store.lexical_search(q, 20) for q in QUERIES}
    with sqlite3.connect(db) as conn:  # an index as it was before migration 0003
        conn.execute("DROP TABLE fts_words_vocab")
        conn.execute("DROP TABLE fts_grams_vocab")
    with SqlIndexStore(f"sqlite:///{db}", migrate_schema=False) as store:
        without = {q: store.lexical_search(q, 20) for q in QUERIES}
    assert with_vocabulary == without
    assert sum(1 for hits in without.values() if len(hits) > 1) >= 8
