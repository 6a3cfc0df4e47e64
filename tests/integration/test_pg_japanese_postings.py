"""Japanese keyword search on PostgreSQL reads postings (migration 0006, decision 0040) and
ranks exactly as the text scan it replaced: same chunks, same scores, same order, after
indexing, re-indexing, deleting and renaming, with a path filter, with Latin words inside
punctuation, with tokens too long to post, and with trigrams that overlap themselves."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.engine import Connection

from kbmcp_adapters.app.bootstrap import bootstrap
from kbmcp_adapters.app.config import build_settings
from kbmcp_adapters.app.knowledge_base import KnowledgeBase
from kbmcp_adapters.store import pg_lexical
from kbmcp_adapters.store.lexical import compile_query
from kbmcp_adapters.store.pg_grams import grams_leg
from tests.conftest import write_files
from tests.hashing_embedder import HashingEmbedder

LONG_TOKEN = "https://example.com/" + "react" * 60 + "/state"

PAGES: dict[str, str] = {
    "guide/state.md": "# state の管理\n\nReact では useState フックで state を宣言します。"
                      "state の更新は再レンダーを引き起こします。コンポーネントの state は"
                      "独立しています。\n\n## props との違い\n\nprops は親から渡される値で、"
                      "state はコンポーネント自身が持つ値です。\n",
    "guide/effects.md": "# エフェクト\n\nエフェクトは \"避難ハッチ\" です。useEffect で外部"
                        "システムと同期します。react-dom/client の createRoot を使います。\n"
                        "\n## クリーンアップ\n\nエフェクトのクリーンアップ関数は次のエフェクト"
                        "の前に呼ばれます。\n",
    "guide/refs.md": "# ref の使い方\n\nuseRef フックで DOM ノードにアクセスします。"
                     "React.createElement と @types/react の型。ReactJS と reactjs。\n"
                     f"\n参照: {LONG_TOKEN}\n",
    "blog/release.md": "# React 19 のリリース\n\nこのリリースで、React はサーバコンポーネントを"
                       "サポートします。ててててて、ああああ、ははははは。Ｒｅａｃｔ の全角。\n",
    "blog/conf.md": "# React Conf\n\nReact Conf の動画プレイリストです。サーバファーストの"
                    "話と、コンパイラの話。state と props の話もあります。\n",
}

QUERIES = [
    "state の更新は再レンダーを引き起こします",
    "React では useState フックで state を宣言",
    "react-dom/client の createRoot",
    "エフェクトのクリーンアップ",
    "@types/react パッケージの型",
    "reactjs と ReactJS",
    "ててててて ああああ",
    "サーバコンポーネントをサポート",
    "Ｒｅａｃｔ の全角",
    "React Conf の動画プレイリスト",
    "props と state の違い",
    "コンポーネント",
    "example state",
]


@pytest.fixture
def kb(tmp_path: Path, pg_url: str) -> Iterator[tuple[Path, str]]:
    write_files(tmp_path, PAGES)
    yield tmp_path, pg_url


def _index(root: Path, url: str) -> None:
    settings = build_settings(None, cwd=root, kb_path=root, database_url=url)
    base = KnowledgeBase(bootstrap(settings, embedder=HashingEmbedder(dimension=16)))
    try:
        report = base.index()
        assert report.failed == 0
    finally:
        base.close()


def _assert_same_as_text_scan(conn: Connection, paths: str | None = None) -> None:
    """Every query: the postings leg answers (not the fallback) and the ranking is the
    text scan's, score for score."""
    for query in QUERIES:
        compiled = compile_query(query)
        leg = grams_leg(conn, compiled.gram_match, compiled.gram_coverage, 20, paths)
        assert leg is not None, query
        new = pg_lexical.rank(conn, query, 20, paths)
        old = pg_lexical.rank(conn, query, 20, paths, postings=False)
        assert new == old, query
    hits = pg_lexical.rank(conn, "state の更新は再レンダーを引き起こします", 20, paths)
    assert hits, "the Japanese query finds its chunk"


def test_postings_rank_japanese_queries_as_the_text_scan_did(kb: tuple[Path, str]) -> None:
    root, url = kb
    _index(root, url)
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            _assert_same_as_text_scan(conn)
            _assert_same_as_text_scan(conn, json.dumps(["guide/state.md", "blog/conf.md"]))
            # the long token was not posted: its row carries the marker and its words
            # are counted in its text
            marked = conn.execute(text("SELECT count(*) FROM lexical_grams WHERE gram = ''"))
            assert marked.scalar_one() >= 1
            # a quoted run is left to the text scan (the trigram index narrows it)
            quoted = compile_query('エフェクトは "避難ハッチ" です')
            assert grams_leg(conn, quoted.gram_match, quoted.gram_coverage, 20, None) is None

        # re-index an edited file and delete another: the trigger and the foreign key
        # keep the postings in step with the lexical rows
        (root / "guide/effects.md").write_text(
            "# 副作用\n\n副作用は外部システムとの同期です。state の更新はしません。\n",
            encoding="utf-8")
        (root / "blog/conf.md").unlink()
        _index(root, url)
        with engine.connect() as conn:
            _assert_same_as_text_scan(conn)
            orphans = conn.execute(text(
                "SELECT count(*) FROM lexical_grams WHERE id NOT IN (SELECT id FROM lexical)"))
            assert orphans.scalar_one() == 0
        # a renamed title (the metadata-only update path) re-posts the row
        with engine.begin() as conn:
            conn.execute(text("UPDATE lexical SET title = 'ててて の新しい題名' WHERE id = "
                              "(SELECT min(id) FROM lexical)"))
        with engine.connect() as conn:
            _assert_same_as_text_scan(conn)
            assert pg_lexical.rank(conn, "新しい題名", 5, None)
    finally:
        engine.dispose()
