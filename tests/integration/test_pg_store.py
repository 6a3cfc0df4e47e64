"""The index store on a real PostgreSQL (tests/pg_cluster.py): a knowledge base indexes,
searches, re-indexes and heals there as it does on SQLite; bad URLs fail in one sentence."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from sqlalchemy.engine import make_url

from kbmcp_adapters.app.config import build_settings
from kbmcp_adapters.store.sql_store import SqlIndexStore, head_revision
from kbmcp_core.errors import ConfigError, IndexNotFound, IndexReadOnly, StoreError
from kbmcp_core.meta_keys import META_MODEL
from kbmcp_core.models import ChunkRecord, DocumentRecord
from tests.conftest import OpenKb, write_files
from tests.pg_cluster import PgCluster
from tests.store_faults import kb_mcp_here, no_traceback

PAGES: dict[str, str | bytes] = {
    "ops/deploy.md": "# Deployment\n\nWe deploy the billing service with blue-green "
                     "deployments and roll back when health checks fail.\n",
    "ops/backup.md": "# Backups\n\nNightly snapshots of the ledger database are copied to "
                     "cold storage and restored once a month as a drill.\n",
    "ja/tokyo.md": "# 東京の事務所\n\n東京都港区の事務所では、入館証を受付で受け取ってください。"
                   "会議室の予約は総務部が管理しています。\n",
    "ja/osaka.md": "# 大阪の倉庫\n\n大阪市の倉庫は平日の午前九時から午後五時まで開いています。"
                   "搬入には事前の申請が必要です。\n",
}


def _paths(kb_search: object) -> list[str]:
    return [hit.path for hit in kb_search.results]  # type: ignore[attr-defined]


def _db_name(url: str) -> str:
    return str(make_url(url).database)


def test_a_knowledge_base_on_postgresql_indexes_searches_and_stays_healthy(
    tmp_path: Path, open_kb: OpenKb, pg_url: str, pg_cluster: PgCluster
) -> None:
    write_files(tmp_path, PAGES)
    kb = open_kb(tmp_path, database_url=pg_url)
    first = kb.index()
    assert (first.added, first.failed) == (4, 0)
    assert not (tmp_path / ".kb-mcp" / "index.db").exists()  # the rows live in PostgreSQL

    # English by stem: "deploying" and "restoring" meet "deploy" and "restored"
    assert _paths(kb.search("deploying rollbacks", mode="lexical"))[0] == "ops/deploy.md"
    assert _paths(kb.search("restoring snapshots", mode="lexical"))[0] == "ops/backup.md"
    # Japanese by substring (trigrams), and a two-character word (substring scan)
    assert _paths(kb.search("入館証の受け取り", mode="lexical"))[0] == "ja/tokyo.md"
    assert _paths(kb.search("倉庫", mode="lexical"))[0] == "ja/osaka.md"
    assert _paths(kb.search("how do I roll back a deployment"))[0] == "ops/deploy.md"

    report = kb.doctor()
    assert report.healthy, [(f.check, f.summary) for f in report.findings]
    assert (report.documents, report.store_check) == (4, "not applicable")

    # an incremental run re-indexes only the changed file
    (tmp_path / "ops/backup.md").write_text(
        "# Backups\n\nHourly snapshots of the ledger database go to a second region.\n",
        encoding="utf-8")
    again = open_kb(tmp_path, database_url=pg_url).index()
    assert (again.updated, again.unchanged, again.added) == (1, 3, 0)
    kb = open_kb(tmp_path, database_url=pg_url)
    assert _paths(kb.search("hourly region", mode="lexical")) == ["ops/backup.md"]
    assert _paths(kb.search("cold storage drill", mode="lexical")) == []

    # deleting a file removes its rows (documents, chunks and lexical rows)
    (tmp_path / "ja/osaka.md").unlink()
    gone = open_kb(tmp_path, database_url=pg_url).index()
    assert (gone.deleted, gone.unchanged) == (1, 3)
    kb = open_kb(tmp_path, database_url=pg_url)
    assert _paths(kb.search("倉庫", mode="lexical")) == []
    with pg_cluster.connect(_db_name(pg_url)) as conn:  # type: ignore[attr-defined]
        counts = conn.execute(
            "SELECT (SELECT count(*) FROM documents), (SELECT count(*) FROM chunks), "
            "(SELECT count(*) FROM lexical), "
            "(SELECT count(*) FROM documents WHERE path = 'ja/osaka.md')").fetchone()
    assert counts[0] == 3 and counts[1] == counts[2] and counts[3] == 0
    report = kb.doctor()
    assert report.healthy, [(f.check, f.summary) for f in report.findings]


def test_doctor_finds_a_chunk_missing_from_the_lexical_table(
    tmp_path: Path, open_kb: OpenKb, pg_url: str, pg_cluster: PgCluster
) -> None:
    write_files(tmp_path, {"ops/deploy.md": PAGES["ops/deploy.md"]})
    open_kb(tmp_path, database_url=pg_url).index()
    with pg_cluster.connect(_db_name(pg_url)) as conn:  # type: ignore[attr-defined]
        conn.execute("DELETE FROM lexical")
    report = open_kb(tmp_path, database_url=pg_url).doctor()
    assert [f.check for f in report.findings] == ["missing-lexical-row"]


def test_a_plain_postgresql_url_means_psycopg_3(pg_cluster: PgCluster) -> None:
    url = pg_cluster.new_database().replace("postgresql+psycopg://", "postgresql://")
    with SqlIndexStore(url, create=True) as store:
        assert store.schema_revision() == head_revision()
    postgres = url.replace("postgresql://", "postgres://")
    with SqlIndexStore(postgres, create=False) as store:
        assert store.stats().documents == 0


#: Waits until the go-file exists (deadline 60 s), then opens the store: every process
#: is past its imports when the file appears, so the migrations really overlap.
_OPEN_WHEN_TOLD = """
import sys, time
from pathlib import Path
from kbmcp_adapters.store.sql_store import SqlIndexStore, head_revision
head_revision()
go = Path(sys.argv[2])
Path(sys.argv[3]).touch()
deadline = time.monotonic() + 60
while not go.exists():
    if time.monotonic() > deadline:
        sys.exit("never told to go")
    time.sleep(0.002)
with SqlIndexStore(sys.argv[1], create=True) as store:
    assert store.schema_revision() == head_revision()
"""


def test_processes_creating_one_new_index_at_once_all_succeed(
    tmp_path: Path, pg_url: str, pg_cluster: PgCluster
) -> None:
    import subprocess
    import sys
    import time

    go = tmp_path / "go"
    ready = [tmp_path / f"ready-{i}" for i in range(4)]
    procs = [subprocess.Popen([sys.executable, "-c", _OPEN_WHEN_TOLD, pg_url, str(go), str(r)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for r in ready]
    try:
        deadline = time.monotonic() + 60
        while not all(r.exists() for r in ready) and time.monotonic() < deadline:
            time.sleep(0.01)
        go.touch()
        outcomes = []
        for p in procs:
            _, err = p.communicate(timeout=120)
            outcomes.append((p.returncode, err))
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
            p.communicate()
    assert [code for code, _ in outcomes] == [0, 0, 0, 0], [err for _, err in outcomes]
    with pg_cluster.connect(_db_name(pg_url)) as conn:  # type: ignore[attr-defined]
        versions = conn.execute("SELECT version_num FROM alembic_version").fetchall()
    assert versions == [(head_revision(),)]


def test_threads_opening_one_new_index_at_once_all_succeed(pg_url: str) -> None:
    start = threading.Barrier(3)
    errors: list[BaseException] = []

    def open_store() -> None:
        try:
            start.wait(timeout=30)
            with SqlIndexStore(pg_url, create=True) as store:
                assert store.schema_revision() == head_revision()
        except BaseException as exc:  # collected: the assertion below shows them
            errors.append(exc)

    threads = [threading.Thread(target=open_store) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in threads)
    assert errors == []


def test_a_reader_on_an_empty_database_is_told_to_index_first(pg_url: str) -> None:
    with pytest.raises(IndexNotFound) as caught:
        SqlIndexStore(pg_url, create=False)
    assert "kb-mcp index" in str(caught.value)


def test_a_role_that_may_only_read_opens_read_only_and_cannot_write(
    pg_url: str, pg_cluster: PgCluster
) -> None:
    with SqlIndexStore(pg_url, create=True) as store:
        store.set_meta(META_MODEL, "m")
    name = _db_name(pg_url)
    with pg_cluster.connect(name) as conn:  # type: ignore[attr-defined]
        conn.execute(f"CREATE ROLE reader_{name} LOGIN")
        conn.execute(f"GRANT SELECT ON ALL TABLES IN SCHEMA public TO reader_{name}")
    reader_url = pg_url.replace("kbtest@", f"reader_{name}@")
    with SqlIndexStore(reader_url, create=False) as store:
        assert store.read_only is True
        assert store.get_meta(META_MODEL) == "m"
        with pytest.raises(IndexReadOnly) as caught:
            store.set_meta(META_MODEL, "other")
    assert "permission denied" in str(caught.value)


# -- a database kb-mcp cannot reach ----------------------------------------------------


def _closed_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_an_unreachable_server_is_one_sentence_without_the_password() -> None:
    url = f"postgresql+psycopg://kb:s3cret@127.0.0.1:{_closed_port()}/kb"
    with pytest.raises(StoreError) as caught:
        SqlIndexStore(url, create=True)
    message = str(caught.value)
    assert "s3cret" not in message and "***" in message
    assert "cannot connect to the PostgreSQL index store" in message
    assert "\n" not in message


def test_a_missing_database_names_the_fix(pg_cluster: PgCluster) -> None:
    url = pg_cluster.url("no_such_db").replace("kbtest@", "kbtest:hunter2@")
    with pytest.raises(StoreError) as caught:
        SqlIndexStore(url, create=True)
    message = str(caught.value)
    assert "does not exist" in message and "createdb" in message
    assert "hunter2" not in message and "\n" not in message


def test_another_driver_is_a_config_error_naming_psycopg() -> None:
    with pytest.raises(ConfigError, match="psycopg") as caught:
        SqlIndexStore("postgresql+psycopg2://kb:s3cret@127.0.0.1/kb", create=True)
    assert "s3cret" not in str(caught.value)


def test_the_cli_reports_an_unreachable_store_in_one_line(
    tmp_path: Path, kb_env: dict[str, str]
) -> None:
    url = f"postgresql://kb:s3cret@127.0.0.1:{_closed_port()}/kb"
    (tmp_path / "kb-mcp.toml").write_text(f'kb_path = "."\ndatabase_url = "{url}"\n')
    build_settings(tmp_path / "kb-mcp.toml")  # a valid setting: the server is the problem
    for command in (["status"], ["search", "keys"], ["index"]):  # in this process: its words
        done = kb_mcp_here([*command, "--config", str(tmp_path / "kb-mcp.toml")], kb_env)
        no_traceback(done.stderr)
        assert done.returncode != 0
        lines = done.stderr.strip().splitlines()
        # `index` meets the server first through the writer lock, which words it its own way
        expected = "cannot connect to the " + ("" if command == ["index"] else "PostgreSQL")
        assert len(lines) == 1 and expected in lines[0], lines
        assert "s3cret" not in done.stderr + done.stdout


def test_a_chunk_id_beyond_32_bits_round_trips(pg_url: str) -> None:
    big = (1 << 62) - 7
    record = DocumentRecord(path="a.md", title="T", content_hash="h", size_bytes=3 << 31,
                            date=None, topic=None, category=None, tags=(), metadata={},
                            last_indexed="2026-01-01T00:00:00Z")
    chunk = ChunkRecord(id=big, ordinal=0, heading="H", heading_path=("H",),
                        content="quartz lantern", text_hash="c", start_line=1,
                        end_line=2, page=None)
    with SqlIndexStore(pg_url, create=True) as store:
        store.write_document(record, [chunk])
        assert store.chunk_ids() == {big}
        assert store.lexical_search("lanterns", 5)[0][0] == big
        assert store.sizes_over(1) == [("a.md", 3 << 31)]


# -- the same Alembic history on PostgreSQL -------------------------------------------


def test_a_postgresql_index_at_revision_0001_upgrades_and_downgrades(
    pg_url: str, pg_cluster: PgCluster
) -> None:
    from kbmcp_adapters.store import alembic_runner
    from kbmcp_adapters.store.engine import make_engine

    alembic_runner.open_at_revision(pg_url, "0001")
    assert alembic_runner.schema_revision(pg_url) == "0001"
    name = _db_name(pg_url)
    with pg_cluster.connect(name) as conn:  # type: ignore[attr-defined]
        conn.execute("INSERT INTO documents (id, path, title, content_hash, tags, metadata, "
                     "last_indexed) VALUES (1, 'a.md', 'T', 'h', '[]', '{}', 'x')")
        conn.execute("INSERT INTO chunks (id, document_id, ordinal, content) "
                     "VALUES (4611686018427387897, 1, 0, 'lantern')")
        conn.execute("INSERT INTO lexical (id, title, heading, body) "
                     "VALUES (4611686018427387897, 'T', '', 'lantern')")
    with SqlIndexStore(pg_url, create=False) as store:
        assert store.schema_revision() == head_revision() == "0008"
        assert store.backfill_sizes({"a.md": 10}) == 1
        assert [cid for cid, _ in store.lexical_search("lanterns", 5)] == [4611686018427387897]
    engine = make_engine(pg_url)
    try:
        with engine.begin() as conn:
            alembic_runner.downgrade(conn, "0001")
            assert alembic_runner.current_revision(conn) == "0001"
            alembic_runner.downgrade(conn, "base")
        with engine.connect() as conn:
            from sqlalchemy import inspect

            assert set(inspect(conn).get_table_names()) <= {"alembic_version"}
    finally:
        engine.dispose()


def test_the_postgresql_head_schema_matches_the_table_definitions(pg_url: str) -> None:
    from alembic.autogenerate import compare_metadata
    from alembic.migration import MigrationContext

    from kbmcp_adapters.store.engine import make_engine
    from kbmcp_adapters.store.tables import is_fts_name, metadata

    SqlIndexStore(pg_url, create=True).close()
    engine = make_engine(pg_url)
    try:
        with engine.connect() as conn:
            context = MigrationContext.configure(
                conn, opts={"include_name": lambda name, type_, _: not is_fts_name(name)})
            assert compare_metadata(context, metadata) == []
    finally:
        engine.dispose()
