"""What ``explain`` costs a search (decision 0035): off against the search before it
existed, and on.

"Before" is kb-mcp at ``BASE``, the commit the query syntax and ``explain`` were built on,
exported with ``git archive`` (read-only) into the work folder; each tree indexes its own
copy of one generated corpus with the packaged model. Rounds alternate a child of each
tree so that load on the machine falls on both alike; a child times, per query, the
search as every front calls it (no ``explain``) and, on today's tree, the same search with
``explain=True`` right after it. Goal: the p50 with ``explain`` off within 5% of before.
"""

from __future__ import annotations

import json
import shutil
import statistics
import subprocess
import sys
import tarfile
import time
from pathlib import Path
from typing import Any

from benchmarks import corpus
from benchmarks.measure import REPO, child_main, index_folder, run_child, summary, write_result
from benchmarks.report import Row, ms, spread, verdict

#: The commit before decision 0035: "today" for the goal.
BASE = "b131bbc"
#: Search p50 with explain off may be at most this many times the p50 before it.
TARGET = 1.05


def _export(rev: str, target: Path) -> Path:
    """The tree of ``rev``, as ``git archive`` gives it (nothing in the repository changes)."""
    if target.exists():
        shutil.rmtree(target)
    target.mkdir(parents=True)
    archive = target.with_suffix(".tar")
    with archive.open("wb") as out:
        subprocess.run(["git", "-C", str(REPO), "archive", rev], stdout=out, check=True)
    with tarfile.open(archive) as tar:
        tar.extractall(target, filter="data")
    archive.unlink()
    return target


def _child_args(task: str, **params: Any) -> list[str]:
    return [sys.executable, "-m", "benchmarks.explain_bench", task, json.dumps(params)]


def measure(work: Path, quick: bool = False) -> dict[str, Any]:
    files, n_queries, warmup, rounds = (12, 8, 2, 1) if quick else (200, 60, 10, 3)
    source = work / "explain-corpus"
    if source.exists():
        shutil.rmtree(source)
    corpus.generate(source, files, seed=23)
    trees = {"before": _export(BASE, work / "explain-before-tree"), "now": REPO}
    kbs: dict[str, Path] = {}
    for name, tree in trees.items():
        kb = work / f"explain-kb-{name}"
        if kb.exists():
            shutil.rmtree(kb)
        shutil.copytree(source, kb)
        run_child(_child_args("index", tree=str(tree), kb=str(kb)))
        kbs[name] = kb
    queries = corpus.queries(n_queries + warmup, seed=29)
    p50: dict[str, list[float]] = {"before": [], "off": [], "on": []}
    samples: dict[str, list[float]] = {"before": [], "off": [], "on": []}
    for _ in range(rounds):
        for name, tree in trees.items():
            data = run_child(_child_args("search", tree=str(tree), kb=str(kbs[name]),
                                         queries=queries, warmup=warmup,
                                         explain=name == "now")).data
            for key in ("off", "on") if name == "now" else ("before",):
                times = data["before" if name == "before" else key]
                p50[key].append(statistics.median(times))
                samples[key] += times
    return {
        "base": BASE, "files": files, "queries": n_queries, "rounds": rounds,
        "search_s": {k: summary(v) for k, v in samples.items()},
        "round_p50_s": p50,
        "off_ratio": statistics.median(p50["off"]) / statistics.median(p50["before"]),
        "on_ratio": statistics.median(p50["on"]) / statistics.median(p50["off"]),
    }


def rows(result: Any) -> list[Row]:
    if not isinstance(result, dict) or "off_ratio" not in result:
        return []
    s = result["search_s"]
    return [
        Row(f"search p50 before explain ({result['base']}, {result['files']} files)",
            ms(s["before"]["median"]), spread(s["before"], p95=True)),
        Row("search p50, explain off", ms(s["off"]["median"]), spread(s["off"], p95=True)),
        Row("  explain off / before (median of round p50s)", f"{result['off_ratio']:.3f}x",
            f"{result['rounds']} rounds", f"<= {TARGET}x", verdict(result["off_ratio"] <= TARGET)),
        Row("search p50, explain on", ms(s["on"]["median"]), spread(s["on"], p95=True)),
        Row("  explain on / off", f"{result['on_ratio']:.3f}x", "per query, same process"),
    ]


# -- the children: they import kb-mcp from the tree they are given ---------------------------
def _use_tree(tree: str) -> None:
    sys.path.insert(0, tree)


def _index(params: dict[str, Any]) -> None:
    _use_tree(params["tree"])
    index_folder(params["kb"])


def _search(params: dict[str, Any]) -> None:
    _use_tree(params["tree"])
    from kbmcp_adapters.app.knowledge_base import open_knowledge_base

    # explain alone against the tree before it: the paragraph step that trees since
    # session 11 run by default (measured by the `paragraphs` row) is held off
    passages = sys.modules.get("kbmcp_core.passages")
    if passages is not None and hasattr(passages, "AUTO_CANDIDATES"):
        setattr(passages, "AUTO_CANDIDATES", 0)  # noqa: B010 - an older tree lacks it

    kb = open_knowledge_base(Path(params["kb"]))
    queries, warmup, explain = params["queries"], params["warmup"], params["explain"]
    for q in queries[:warmup]:
        kb.search(q)
        if explain:
            kb.search(q, explain=True)
    off: list[float] = []
    on: list[float] = []
    for q in queries[warmup:]:
        started = time.perf_counter()
        kb.search(q)
        off.append(time.perf_counter() - started)
        if explain:
            started = time.perf_counter()
            kb.search(q, explain=True)
            on.append(time.perf_counter() - started)
    kb.close()
    write_result({"before": off, "off": off, "on": on})


if __name__ == "__main__":  # python -m benchmarks.explain_bench WORK [--quick]
    child_main(_index, _search, measure)
