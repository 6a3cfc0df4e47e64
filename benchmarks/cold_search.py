"""A cold ``kb-mcp search`` (no server, a fresh process) against its floor (issue 43, goal 1;
decision 0057).

The floor is a process that does only what any search by meaning must: import ONNX
Runtime and the tokenizer, open the model file the index's model runs, and embed the
query (tokenize, one run, the mean of the token states). Measured, alternating so that a
busy machine weighs on each alike: that floor, ``kb-mcp search --no-server`` (hybrid, the
default) and, when this is a git checkout that still holds it, the same command on the
code before decision 0057 (``BEFORE``, its tree exported to the work folder and put first
on the import path). Figures are medians; each row is a ratio against the floor of the
same run. The indexes are built with the stand-in embedder under the real model's identity
(``benchmarks.standin``): the search embeds its query with the real model, and the vectors'
values do not change what a search costs. The goal: at most 1.2 s at 1k chunks and 1.8 s
at 100k on an idle machine; the row is judged on those seconds and prints the ratio they
allow over the floor it measured (about 0.3 s idle on the bench machine, so 4x and 6x).
"""

from __future__ import annotations

import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks import corpus
from benchmarks.measure import CHILD_ENV, before_tree, kb_mcp, run_child, summary, worker
from benchmarks.report import Row, ms, verdict

#: (name, generated notes, seed, largest note in KB, goal in seconds on an idle machine)
SIZES = {"1k": (200, 61, 8.0, 1.2), "100k": (22_500, 62, 4.5, 1.8)}
QUICK_FILES = 40
FLOOR = """
import sys
import numpy as np
import onnxruntime as ort
from tokenizers import Tokenizer
folder, name, query = sys.argv[1:4]
tokenizer = Tokenizer.from_file(folder + "/tokenizer.json")
tokenizer.enable_truncation(max_length=256)
session = ort.InferenceSession(folder + "/" + name, providers=["CPUExecutionProvider"])
encoding = tokenizer.encode(query)
ids = np.array([encoding.ids], dtype=np.int64)
mask = np.array([encoding.attention_mask], dtype=np.int64)
feed = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
states = session.run(None, feed)[0]
vector = states[0][mask[0] > 0].mean(axis=0)
print(float(np.linalg.norm(vector)) > 0)
"""


def _env() -> dict[str, str]:
    return {**os.environ, **CHILD_ENV}


def _timed(args: list[str], env: dict[str, str] | None = None) -> tuple[float, float]:
    """The command's wall seconds and CPU seconds (user + system, from its rusage)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(args, env=env or _env(), capture_output=True, text=True,
                          timeout=600, check=False, stdin=subprocess.DEVNULL, cwd="/")
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(args[:4])} ... exited {done.returncode}: "
                           f"{done.stderr[-1500:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def _model_file() -> Path:
    """The ONNX file the default model runs here (the integer copy, made if missing)."""
    from kbmcp_adapters.embedding.fastembed_embedder import FastEmbedEmbedder

    return FastEmbedEmbedder()._resolve_minilm()  # noqa: SLF001


def _index(work: Path, size: str, quick: bool) -> tuple[Path, int]:
    files, seed, max_kb, _goal = SIZES[size]
    kb = work / f"cold-search-{size}"
    if kb.exists():
        shutil.rmtree(kb)
    corpus.generate(kb, QUICK_FILES if quick else files, seed=seed, max_kb=max_kb)
    child = run_child(worker("build", kb=str(kb)), timeout=7200.0)
    return kb, int(child.data["chunks"])


def measure_one(work: Path, size: str, *, quick: bool, repeats: int) -> dict[str, Any]:
    """Floor, now and before at one index size."""
    kb, chunks = _index(work, size, quick)
    model = _model_file()
    before = before_tree(work)
    queries = corpus.queries(repeats, seed=43)
    runs: dict[str, list[float]] = {"floor": [], "now": [], "before": []}
    cpu: dict[str, list[float]] = {"floor": [], "now": [], "before": []}

    def timed(key: str, args: list[str], env: dict[str, str] | None = None) -> None:
        wall, used = _timed(args, env)
        runs[key].append(wall)
        cpu[key].append(used)

    old_env = None
    if before is not None:
        old_env = {**_env(), "PYTHONPATH": os.pathsep.join(
            filter(None, [str(before), os.environ.get("PYTHONPATH")]))}
    search = [kb_mcp(), "search", "--kb-path", str(kb), "--no-server"]
    _timed([*search, queries[0]])  # the page cache warm for every contender alike
    if old_env is not None:
        _timed([sys.executable, "-m", "kbmcp_cli", *search[1:], queries[0]], old_env)
    for query in queries:
        timed("floor", [sys.executable, "-c", FLOOR, str(model.parent), model.name, query])
        timed("now", [*search, query])
        if old_env is not None:
            timed("before", [sys.executable, "-m", "kbmcp_cli", *search[1:], query], old_env)
    floor, floor_cpu = statistics.median(runs["floor"]), statistics.median(cpu["floor"])
    out: dict[str, Any] = {"chunks": chunks, "goal_s": SIZES[size][3],
                           "load_average": os.getloadavg()}
    for key, samples in runs.items():
        if samples:
            out[key] = {"s": summary(samples), "ratio": statistics.median(samples) / floor,
                        "cpu_s": summary(cpu[key]),
                        "cpu_ratio": statistics.median(cpu[key]) / floor_cpu}
    return out


def measure(work: Path, *, quick: bool = False, large: bool = False) -> dict[str, Any]:
    """The ``coldsearch`` step: 1k chunks; ``large`` (``coldsearch100k``) adds 100k."""
    sizes = ["1k", "100k"] if large else ["1k"]
    return {size: measure_one(work, size, quick=quick, repeats=3 if quick else 7)
            for size in sizes}


def rows(result: Any) -> list[Row]:
    """One row per index size: now | before | floor, each as a ratio to the floor."""
    if not isinstance(result, dict):
        return []
    out = []
    for got in result.values():
        if not isinstance(got, dict) or "now" not in got:
            continue
        floor, now = got["floor"]["s"]["median"], got["now"]["s"]["median"]
        before = got.get("before")
        was = (f"{ms(before['s']['median'])} ({before['ratio']:.2f}x)" if before
               else "not measured")
        # The goal is seconds on an idle machine: judged on the median itself, with the
        # ratio it allows over this run's floor beside it (a busy machine shows its load).
        goal_ratio = got["goal_s"] / floor
        out.append(Row(
            f"cold kb-mcp search, {got['chunks']:,} chunks: now | before | floor",
            f"{ms(now)} ({got['now']['ratio']:.2f}x) | {was} | {ms(floor)}",
            f"load {got['load_average'][0]:.1f}",
            f"<= {got['goal_s']} s idle ({goal_ratio:.1f}x this floor)",
            verdict(now <= got["goal_s"])))
        if "cpu_s" in got["now"]:
            old = (f"{ms(before['cpu_s']['median'])} ({before['cpu_ratio']:.2f}x)"
                   if before and "cpu_s" in before else "not measured")
            out.append(Row("  its CPU seconds (user + system): now | before | floor",
                           f"{ms(got['now']['cpu_s']['median'])} "
                           f"({got['now']['cpu_ratio']:.2f}x) | {old} | "
                           f"{ms(got['floor']['cpu_s']['median'])}",
                           "steadier than wall time on a busy machine"))
    return out
