"""Japanese keyword search on PostgreSQL against SQLite on the same corpus (issue 29.4).

A generated Japanese corpus (React-documentation-like sentences: a small word list below
and made-up katakana and kanji words, drawn Zipf-distributed as a real text's words are,
with Latin API names mixed in as the real documents have them) is indexed twice with
the model-free hashing embedder: into SQLite and into a throwaway PostgreSQL cluster
(``tests.pg_cluster``, started and stopped here). Each query is timed through
``SqlIndexStore.lexical_search`` on SQLite, on PostgreSQL with the postings of migration
0006 (now), and on PostgreSQL with the text scan it replaced (before,
``pg_lexical.rank(..., postings=False)``), the three in rotating order so load falls on
all alike. Goal: PostgreSQL p50 <= 2x SQLite p50, with the same results as before (the
run counts the queries whose ranking is identical).
"""

from __future__ import annotations

import dataclasses
import functools
import random
import shutil
import statistics
import time
from pathlib import Path
from typing import Any

from benchmarks.report import Row, ms, verdict

#: PostgreSQL p50 may be at most this many times SQLite's.
TARGET = 2.0

_NOUNS = (
    "コンポーネント", "フック", "レンダー", "エフェクト", "状態", "ツリー", "イベント",
    "ハンドラ", "関数", "配列", "オブジェクト", "サーバ", "クライアント", "データ",
    "リクエスト", "レスポンス", "キャッシュ", "ルーター", "ページ", "レイアウト", "フォーム",
    "入力", "ボタン", "リスト", "キー", "参照", "コンテクスト", "プロバイダ", "値", "型",
    "パッケージ", "ライブラリ", "コンパイラ", "アプリ", "ブラウザ", "ノード", "属性",
    "スタイル", "アニメーション", "トランジション", "サスペンス", "境界", "エラー", "警告",
    "開発", "本番", "環境", "設定", "ドキュメント", "チュートリアル", "例", "問題", "方法",
)
_VERBS = (
    "使用します", "呼び出します", "返します", "更新します", "作成します", "共有します",
    "管理します", "表示します", "渡します", "保持します", "読み取ります", "書き込みます",
    "同期します", "最適化します", "分割します", "統合します", "移行します", "確認します",
)
_PARTICLES = ("は", "が", "を", "に", "で", "と", "の", "から", "まで", "より")
_LATIN = (
    "React", "state", "props", "useState", "useEffect", "useRef", "DOM", "JSX",
    "react-dom/client", "createRoot", "TypeScript", "Next.js", "Server Components",
    "@types/react", "useMemo", "useCallback", "Suspense", "hydrateRoot", "fetch", "ref",
)


_KANA = (
    "ア", "イ", "ウ", "エ", "オ", "カ", "キ", "ク", "ケ", "コ", "サ", "シ", "ス", "セ", "ソ",
    "タ", "チ", "ツ", "テ", "ト", "ナ", "ニ", "ヌ", "ネ", "ノ", "ハ", "ヒ", "フ", "ヘ", "ホ",
    "マ", "ミ", "ム", "メ", "モ", "ヤ", "ユ", "ヨ", "ラ", "リ", "ル", "レ", "ロ", "ワ", "ン",
    "ガ", "ギ", "グ", "ゲ", "ゴ", "ザ", "ジ", "ズ", "ダ", "デ", "ド", "バ", "ビ", "ブ", "パ",
    "プ", "ー",
)
_KANJI = (
    "状", "態", "関", "数", "値", "型", "表", "示", "更", "新", "作", "成", "管", "理", "共",
    "有", "処", "読", "書", "込", "同", "期", "最", "適", "化", "分", "割", "統", "合", "移",
    "行", "確", "認", "開", "発", "本", "番", "環", "境", "設", "定", "例", "問", "題", "方",
    "法", "入", "力", "出", "要", "素", "参", "照", "親", "子", "外", "部", "内", "初", "期",
    "描", "画", "計", "算", "記", "憶", "変", "換", "構", "造", "実", "装", "検", "証", "登",
    "録", "削", "除", "追", "加", "選", "択", "非", "同", "期", "並", "列", "順", "序", "副",
)
#: How many made-up words the corpus draws from (Zipf-distributed, as real text's are).
_VOCABULARY = 3000


def _vocabulary(rng: random.Random) -> list[str]:
    words = list(_NOUNS)
    while len(words) < _VOCABULARY:
        if rng.random() < 0.5:
            words.append("".join(rng.choice(_KANA) for _ in range(rng.randint(2, 5))))
        else:
            words.append("".join(rng.choice(_KANJI) for _ in range(rng.randint(2, 3))))
    return words


_WORDS = _vocabulary(random.Random(4))
_WEIGHTS = [1.0 / (rank + 1) for rank in range(len(_WORDS))]


def _noun(rng: random.Random) -> str:
    return rng.choices(_WORDS, _WEIGHTS)[0]


def _sentence(rng: random.Random) -> str:
    parts = []
    for _ in range(rng.randint(2, 5)):
        word = rng.choice(_LATIN) + " " if rng.random() < 0.15 else _noun(rng)
        parts.append(word + rng.choice(_PARTICLES))
    return "".join(parts) + rng.choice(_VERBS) + "。"


def generate(root: Path, files: int, seed: int = 29) -> None:
    """``files`` Markdown pages of Japanese sections; same arguments, same bytes."""
    rng = random.Random(seed)
    for i in range(files):
        lines = [f"# {_noun(rng)}と{rng.choice(_LATIN)}の{_noun(rng)}", ""]
        for _ in range(rng.randint(3, 8)):
            lines += [f"## {_noun(rng)}の{_noun(rng)}", ""]
            for _ in range(rng.randint(2, 4)):
                lines += ["".join(_sentence(rng) for _ in range(rng.randint(3, 7))), ""]
        folder = root / f"part-{i % 8}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"page-{i:04d}.md").write_text("\n".join(lines), encoding="utf-8")


def queries(n: int, seed: int = 31) -> list[str]:
    """Questions in the corpus's vocabulary, a sentence or a few words each."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        out.append(_sentence(rng) if i % 2 else
                   f"{rng.choice(_LATIN)} の {_noun(rng)}{_noun(rng)}")
    return out


def _index(root: Path, **settings: Any) -> None:
    from kbmcp_adapters.app.bootstrap import bootstrap
    from kbmcp_adapters.app.config import build_settings
    from kbmcp_adapters.app.knowledge_base import KnowledgeBase
    from tests.hashing_embedder import HashingEmbedder

    s = build_settings(None, cwd=root, kb_path=root, **settings)
    kb = KnowledgeBase(bootstrap(s, embedder=HashingEmbedder(dimension=16)))
    try:
        kb.index(force=True)
    finally:
        kb.close()


def measure(work: Path, quick: bool = False) -> dict[str, Any]:
    from kbmcp_adapters.store import pg_lexical
    from kbmcp_adapters.store.sql_store import SqlIndexStore
    from tests.pg_cluster import start_cluster

    files, n_queries, warmup = (40, 16, 3) if quick else (1200, 80, 8)
    root = work / "pg-japanese"
    if root.exists():
        shutil.rmtree(root)
    generate(root, files)
    cluster = start_cluster()
    try:
        url = cluster.new_database()
        started = time.perf_counter()
        _index(root)
        sqlite_index_s = time.perf_counter() - started
        started = time.perf_counter()
        _index(root, database_url=url)
        pg_index_s = time.perf_counter() - started
        lite = SqlIndexStore(f"sqlite:///{root / '.kb-mcp' / 'index.db'}")
        now = SqlIndexStore(url)
        before = SqlIndexStore(url)
        # the text scan the postings replaced, through the same store method
        object.__setattr__(before, "_dialect", dataclasses.replace(
            before._dialect, rank=functools.partial(pg_lexical.rank, postings=False)))
        stores = {"sqlite": lite, "pg": now, "pg_before": before}
        asked = queries(n_queries + warmup)
        for q in asked[:warmup]:
            for store in stores.values():
                store.lexical_search(q, 50)
        times: dict[str, list[float]] = {name: [] for name in stores}
        results: dict[str, list[list[tuple[int, float]]]] = {name: [] for name in stores}
        names = list(stores)
        for k, q in enumerate(asked[warmup:]):
            for name in names[k % 3:] + names[:k % 3]:
                t = time.perf_counter()
                hits = stores[name].lexical_search(q, 50)
                times[name].append(time.perf_counter() - t)
                results[name].append(hits)
        chunks = now.stats().chunks
        for store in stores.values():
            store.close()
    finally:
        cluster.stop()
    p50 = {name: statistics.median(ts) * 1000 for name, ts in times.items()}
    identical = sum(1 for a, b in zip(results["pg"], results["pg_before"], strict=True)
                    if a == b)
    return {
        "files": files, "chunks": chunks, "queries": n_queries,
        "sqlite_p50_ms": p50["sqlite"], "pg_p50_ms": p50["pg"],
        "pg_before_p50_ms": p50["pg_before"],
        "ratio": p50["pg"] / p50["sqlite"], "before_ratio": p50["pg_before"] / p50["sqlite"],
        "identical_rankings": identical,
        "sqlite_index_s": sqlite_index_s, "pg_index_s": pg_index_s,
    }


def rows(result: Any) -> list[Row]:
    """The report row of this step."""
    if not isinstance(result, dict) or "ratio" not in result:
        return []
    return [Row(f"Japanese keywords ({result['chunks']:,} chunks): PostgreSQL p50 / SQLite p50",
                f"{result['ratio']:.2f}x (before {result['before_ratio']:.2f}x)",
                f"PG {ms(result['pg_p50_ms'] / 1000)}, SQLite "
                f"{ms(result['sqlite_p50_ms'] / 1000)}, identical "
                f"{result['identical_rankings']}/{result['queries']}",
                f"<= {TARGET:g}x", verdict(result["ratio"] <= TARGET))]
