"""Collections in team mode on a real PostgreSQL: each collection's index in its own schema
``kb_<name>`` of one database (migrated, locked and read on its own, never seeing another's
rows), and each collection's vectors under its own prefix of one bucket."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy.engine import make_url

from kbmcp_adapters.app.knowledge_base import KnowledgeBase
from kbmcp_adapters.store.advisory_lock import advisory_lock
from kbmcp_adapters.store.pg_schema import schema_url, url_schema
from kbmcp_adapters.store.sql_store import head_revision
from kbmcp_adapters.store.urls import safe_url
from kbmcp_core.errors import ConfigError, IndexNotFound, IndexReadOnly, WriterBusy
from tests.conftest import OpenKb, write_files
from tests.pg_cluster import PgCluster
from tests.s3_server import S3Server

#: Two folders whose words never meet, and one path both hold with different contents.
ALPHA: dict[str, str | bytes] = {
    "ops/deploy.md": "# Deployment\n\nWe deploy the billing service with blue-green "
                     "deployments and roll back when health checks fail.\n",
    "ja/tokyo.md": "# 東京の事務所\n\n東京都港区の事務所では、入館証を受付で受け取ってください。\n",
    "shared/readme.md": "# Alpha readme\n\nThe alpha team owns the billing pipeline.\n",
}
BETA: dict[str, str | bytes] = {
    "ops/backup.md": "# Backups\n\nNightly snapshots of the ledger database are copied to "
                     "cold storage and restored once a month as a drill.\n",
    "ja/osaka.md": "# 大阪の倉庫\n\n大阪市の倉庫は平日の午前九時から午後五時まで開いています。\n",
    "shared/readme.md": "# Beta readme\n\nThe beta team runs the ledger snapshots.\n",
}
PLAIN: dict[str, str | bytes] = {
    "garden/basil.md": "# Basil\n\nBasil grows on the sunny windowsill of the office kitchen.\n",
}
QUERIES = ("deploy the billing service", "nightly snapshots cold storage", "入館証",
           "倉庫", "readme team", "basil windowsill", "roll back health checks")


def _paths(kb: KnowledgeBase, query: str, mode: str) -> set[str]:
    return {hit.path for hit in kb.search(query, mode=mode, limit=10).results}


def _rows(cluster: PgCluster, url: str, sql: str) -> list[tuple[object, ...]]:
    with cluster.connect(str(make_url(url).database)) as conn:  # type: ignore[attr-defined]
        return list(conn.execute(sql).fetchall())


def test_two_collections_in_one_database_each_see_only_their_own_rows(
    tmp_path: Path, open_kb: OpenKb, pg_url: str, pg_cluster: PgCluster
) -> None:
    # a one-folder index in the default schema first: collections must not read or write it
    write_files(tmp_path / "plain", PLAIN)
    assert open_kb(tmp_path / "plain", database_url=pg_url).index().added == 1
    urls = {name: schema_url(pg_url, f"kb_{name}") for name in ("alpha", "beta")}
    write_files(tmp_path / "alpha", ALPHA)
    write_files(tmp_path / "beta", BETA)

    alpha = open_kb(tmp_path / "alpha", database_url=urls["alpha"])
    assert alpha.index().added == 3
    # migrated on its own: beta's schema does not exist until beta's first run
    schemas = "SELECT nspname FROM pg_namespace WHERE nspname LIKE 'kb\\_%' ORDER BY 1"
    assert _rows(pg_cluster, pg_url, schemas) == [("kb_alpha",)]
    beta = open_kb(tmp_path / "beta", database_url=urls["beta"])
    assert beta.index().added == 3
    assert _rows(pg_cluster, pg_url, schemas) == [("kb_alpha",), ("kb_beta",)]
    for schema in ("public", "kb_alpha", "kb_beta"):
        assert _rows(pg_cluster, pg_url, f"SELECT version_num FROM {schema}.alembic_version"
                     ) == [(head_revision(),)], schema
    # every table, and 0006's functions, in each schema; pg_trgm once, in public
    functions = ("SELECT n.nspname FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace "
                 "WHERE p.proname = 'lexical_grams_write' ORDER BY 1")
    assert _rows(pg_cluster, pg_url, functions) == [("kb_alpha",), ("kb_beta",), ("public",)]
    assert _rows(pg_cluster, pg_url, "SELECT n.nspname FROM pg_extension e JOIN pg_namespace n "
                 "ON n.oid = e.extnamespace WHERE e.extname = 'pg_trgm'") == [("public",)]
    counts = "SELECT (SELECT count(*) FROM {0}.documents), (SELECT count(*) FROM {0}.lexical_grams)"
    for schema, documents in (("public", 1), ("kb_alpha", 3), ("kb_beta", 3)):
        found = _rows(pg_cluster, pg_url, counts.format(schema))[0]
        assert found[0] == documents and int(str(found[1])) > 0, (schema, found)

    # reopened as a server would, every leg of every query stays in its own collection
    alpha = open_kb(tmp_path / "alpha", database_url=urls["alpha"])
    beta = open_kb(tmp_path / "beta", database_url=urls["beta"])
    plain = open_kb(tmp_path / "plain", database_url=pg_url)
    for query in QUERIES:
        for mode in ("lexical", "vector", "hybrid"):
            assert _paths(alpha, query, mode) <= set(ALPHA), (query, mode)
            assert _paths(beta, query, mode) <= set(BETA), (query, mode)
            assert _paths(plain, query, mode) <= set(PLAIN), (query, mode)
    assert _paths(alpha, "入館証", "lexical") == {"ja/tokyo.md"}
    assert _paths(beta, "入館証", "lexical") == set()
    assert _paths(beta, "倉庫", "lexical") == {"ja/osaka.md"}
    assert _paths(alpha, "倉庫", "lexical") == set()
    assert _paths(beta, "cold storage drill", "lexical") == {"ops/backup.md"}
    assert _paths(alpha, "cold storage drill", "lexical") == set()
    # list and get
    assert alpha.indexed_paths() == sorted(ALPHA)
    assert beta.indexed_paths() == sorted(BETA)
    assert plain.indexed_paths() == sorted(PLAIN)
    alpha_row, beta_row = alpha.document("shared/readme.md"), beta.document("shared/readme.md")
    assert alpha_row is not None and alpha_row.title == "Alpha readme"
    assert beta_row is not None and beta_row.title == "Beta readme"
    assert alpha.document("ops/backup.md") is None

    # a deletion in one collection leaves the other's same path alone
    (tmp_path / "beta" / "shared" / "readme.md").unlink()
    assert open_kb(tmp_path / "beta", database_url=urls["beta"]).index().deleted == 1
    alpha = open_kb(tmp_path / "alpha", database_url=urls["alpha"])
    assert alpha.indexed_paths() == sorted(ALPHA)
    assert _paths(alpha, "readme team", "lexical") == {"shared/readme.md"}


def test_each_collection_has_its_own_writer_lock(
    tmp_path: Path, open_kb: OpenKb, pg_url: str, pg_cluster: PgCluster
) -> None:
    urls = {name: schema_url(pg_url, f"kb_{name}") for name in ("alpha", "beta")}
    # an operator made beta's schema beforehand (a role without CREATE on the database)
    with pg_cluster.connect(str(make_url(pg_url).database)) as conn:  # type: ignore[attr-defined]
        conn.execute('CREATE SCHEMA "kb_beta"')
    write_files(tmp_path / "alpha", ALPHA)
    write_files(tmp_path / "beta", BETA)
    write_files(tmp_path / "plain", PLAIN)
    with advisory_lock(urls["alpha"], 1.0):  # another writer of alpha, on any host
        # beta's writer and the default schema's are not held up by it ...
        assert open_kb(tmp_path / "beta", database_url=urls["beta"]).index().added == 3
        assert open_kb(tmp_path / "plain", database_url=pg_url).index().added == 1
        # ... alpha's is
        with pytest.raises(WriterBusy) as caught:
            open_kb(tmp_path / "alpha", database_url=urls["alpha"],
                    writer_lock_timeout_s=0.3).index()
        assert "another writer" in str(caught.value)
    assert open_kb(tmp_path / "alpha", database_url=urls["alpha"]).index().added == 3
    # pg_trgm was made once, in public, by beta's first migration
    assert _rows(pg_cluster, pg_url, "SELECT n.nspname FROM pg_extension e JOIN pg_namespace n "
                 "ON n.oid = e.extnamespace WHERE e.extname = 'pg_trgm'") == [("public",)]
    assert _paths(open_kb(tmp_path / "beta", database_url=urls["beta"]), "倉庫", "lexical") == {
        "ja/osaka.md"}


def test_a_read_only_replica_reads_each_collection_and_creates_nothing(
    tmp_path: Path, open_kb: OpenKb, pg_url: str, pg_cluster: PgCluster
) -> None:
    urls = {name: schema_url(pg_url, f"kb_{name}") for name in ("alpha", "beta")}
    for name, pages in (("alpha", ALPHA), ("beta", BETA)):
        write_files(tmp_path / name, pages)
        assert open_kb(tmp_path / name, database_url=urls[name]).index().added == 3
    database = str(make_url(pg_url).database)
    role = f"reader_{database}"
    with pg_cluster.connect(database) as conn:  # type: ignore[attr-defined]
        conn.execute(f"CREATE ROLE {role} LOGIN")
        for schema in ("kb_alpha", "kb_beta"):
            conn.execute(f"GRANT USAGE ON SCHEMA {schema} TO {role}")
            conn.execute(f"GRANT SELECT ON ALL TABLES IN SCHEMA {schema} TO {role}")

    def replica_url(name: str) -> str:
        return schema_url(pg_url.replace("kbtest@", f"{role}@"), f"kb_{name}")

    empty = tmp_path / "replica"  # a replica on another machine, without the folders
    empty.mkdir()
    for name, pages, query in (("alpha", ALPHA, "deploy the billing service"),
                               ("beta", BETA, "nightly snapshots cold storage")):
        replica = open_kb(empty, database_url=replica_url(name), read_only=True,
                          vectors_uri=str(tmp_path / name / ".kb-mcp" / "vectors"))
        assert replica.is_read_only()
        assert replica.indexed_paths() == sorted(pages)
        for mode in ("lexical", "hybrid"):
            found = _paths(replica, query, mode)
            assert found and found <= set(pages), (name, mode, found)
    # a collection never indexed: the replica is told to index first and creates no schema
    with pytest.raises(IndexNotFound) as caught:
        open_kb(empty, database_url=replica_url("gamma"), read_only=True).indexed_paths()
    assert "kb-mcp index" in str(caught.value) and "schema kb_gamma" in str(caught.value)
    assert _rows(pg_cluster, pg_url,
                 "SELECT count(*) FROM pg_namespace WHERE nspname = 'kb_gamma'") == [(0,)]
    # and the reader may not write a collection it can read
    with pytest.raises(IndexReadOnly):
        open_kb(tmp_path / "alpha", database_url=replica_url("alpha")).index()


def test_vectors_of_each_collection_live_under_its_own_prefix(
    tmp_path: Path, open_kb: OpenKb, pg_url: str, s3_server: S3Server
) -> None:
    import re
    import urllib.request

    bucket = s3_server.new_bucket()
    for name, pages in (("alpha", ALPHA), ("beta", BETA)):
        write_files(tmp_path / name, pages)
        kb = open_kb(tmp_path / name, database_url=schema_url(pg_url, f"kb_{name}"),
                     vectors_uri=f"s3://{bucket}/team/{name}",
                     vectors_storage_options=s3_server.storage_options())
        assert kb.index().added == 3
    url = f"{s3_server.endpoint}/{bucket}?list-type=2&prefix=team/"
    with urllib.request.urlopen(url, timeout=10) as answer:
        keys = re.findall(r"<Key>([^<]+)</Key>", answer.read().decode())
    assert {key.split("/")[1] for key in keys} == {"alpha", "beta"}
    for name, pages, query in (("alpha", ALPHA, "deploy the billing service"),
                               ("beta", BETA, "nightly snapshots cold storage")):
        replica = tmp_path / "replica-of" / name  # another machine: no folder, no index
        replica.mkdir(parents=True)
        kb = open_kb(replica,
                     database_url=schema_url(pg_url, f"kb_{name}"), read_only=True,
                     vectors_uri=f"s3://{bucket}/team/{name}",
                     vectors_storage_options=s3_server.storage_options())
        found = _paths(kb, query, "vector")
        assert found and found <= set(pages), (name, found)


def test_a_schema_url_names_its_schema_and_refuses_what_postgresql_would_cut(
    pg_url: str
) -> None:
    url = schema_url(pg_url + "?options=-c%20statement_timeout%3D5000", "kb_my-notes")
    assert url_schema(url) == "kb_my-notes" and url_schema(pg_url) is None
    assert "statement_timeout" in url
    assert safe_url(url).endswith(" (schema kb_my-notes)")
    assert "search_path" not in safe_url(url)
    assert url_schema(schema_url(url, "kb_other")) == "kb_other"  # replaced, not added
    with pytest.raises(ConfigError, match="63"):
        schema_url(pg_url, "kb_" + "x" * 61)
    with pytest.raises(ConfigError):
        schema_url("sqlite:////tmp/index.db", "kb_notes")
