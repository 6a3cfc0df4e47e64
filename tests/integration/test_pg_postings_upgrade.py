"""Migration 0007 on PostgreSQL: a database whose postings 0006 wrote upgrades in place, and
a row written after the upgrade gets exactly the postings 0006 gave it (Latin, Japanese
and mixed text); downgrading restores 0006's function with the same postings."""

from __future__ import annotations

from sqlalchemy import text

from kbmcp_adapters.store import alembic_runner
from kbmcp_adapters.store.engine import make_engine
from kbmcp_adapters.store.sql_store import SqlIndexStore
from tests.pg_rows import write_rows_one_by_one

TEXTS = [
    ("Release notes", "Install > Upgrade", "Run pip install --upgrade kb-mcp; the react-dom/"
                                          "client package and ReactJS stay."),
    ("state の管理", "props との違い", "React では useState フックで state を宣言します。"
                                    "ててててて、ああああ。"),
    ("Plain", "", "No CJK at all, but 全角 Ｒｅａｃｔ in the body only."),
    ("サーバ", "コンポーネント", "サーバコンポーネントをサポートします"),
]
POSTINGS = "SELECT gram, id, tf, dl FROM lexical_grams ORDER BY id, gram"


def _postings(url: str, *, rewrite: bool = False) -> list[tuple[object, ...]]:
    """The stored postings; ``rewrite``: each row's texts written again first (its
    postings made again by the function of the current revision)."""
    engine = make_engine(url)
    try:
        with engine.begin() as conn:
            if rewrite:
                conn.execute(text("UPDATE lexical SET body = body, title = title"))
            return [tuple(r) for r in conn.execute(text(POSTINGS))]
    finally:
        engine.dispose()


def test_postings_written_after_the_upgrade_are_the_ones_0006_wrote(pg_url: str) -> None:
    alembic_runner.open_at_revision(pg_url, "0006")
    write_rows_one_by_one(pg_url, TEXTS, doc_id=1, path="a.md")
    before = _postings(pg_url)
    assert {gram for gram, *_ in before} >= {"upgrade", "react", "サーバ", "コンポ"}
    with SqlIndexStore(pg_url, create=False) as store:  # upgraded to head on opening
        assert store.schema_revision() == "0008"
        assert [cid for cid, _ in store.lexical_search("upgrade", 5)] == [1]
    assert _postings(pg_url) == before  # nothing stored was rewritten
    assert _postings(pg_url, rewrite=True) == before  # and the new function makes the same
    engine = make_engine(pg_url)
    try:
        with engine.begin() as conn:
            alembic_runner.downgrade(conn, "0006")
    finally:
        engine.dispose()
    assert _postings(pg_url, rewrite=True) == before
