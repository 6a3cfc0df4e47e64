"""`kb-mcp search` from the shell against its floor (issue 14, item 2; decision 0018).

The floor of one search is a bare interpreter start (``python -c 'import sys'``, median)
plus the search itself, as the running server timed it for that very query. Measured:
the command's wall time, spawn to exit, (a) answered by a running ``kb-mcp serve`` in
hybrid and lexical mode, and (b) with no server, ``--mode lexical`` (it must not load the
model) and, a few times, the default hybrid mode (it loads the model: for reference).
"""

from __future__ import annotations

import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks import corpus
from benchmarks.measure import CHILD_ENV, kb_mcp, summary
from benchmarks.report import Row, ms, spread, verdict

#: The issue's goal for a search answered by a running server.
GOAL = 1.5
_SEARCHED = re.compile(r"answered by the kb-mcp server \(pid \d+\).*\(search ([0-9.]+) ms")
_DEADLINE = 300.0


def _env() -> dict[str, str]:
    return {**os.environ, **CHILD_ENV}


def _wall(args: list[str]) -> tuple[float, subprocess.CompletedProcess[str]]:
    started = time.perf_counter()
    done = subprocess.run(args, env=_env(), capture_output=True, text=True, timeout=_DEADLINE,
                          check=False, stdin=subprocess.DEVNULL)
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(args[:4])} ... exited {done.returncode}: "
                           f"{done.stderr[-2000:]}")
    return wall, done


def _search(kb: Path, query: str, *args: str) -> list[str]:
    return [kb_mcp(), "search", "--kb-path", str(kb), query, *args]


def _through_server(kb: Path, queries: list[str], mode: str) -> tuple[list[float], list[float]]:
    """(wall times, the server's own search times) of ``kb-mcp search`` answered by it."""
    walls, searched = [], []
    for query in queries:
        wall, done = _wall(_search(kb, query, "--mode", mode, "-v"))
        found = _SEARCHED.search(done.stderr)
        if found is None:
            raise RuntimeError(f"not answered by the server: {done.stderr[-500:]}")
        walls.append(wall)
        searched.append(float(found.group(1)) / 1000)
    return walls, searched


def _wait_for_socket(kb: Path, proc: subprocess.Popen[bytes]) -> None:
    path = kb / ".kb-mcp" / "kb-mcp.sock"
    end = time.monotonic() + _DEADLINE
    while not path.exists():
        if proc.poll() is not None or time.monotonic() > end:
            raise RuntimeError("kb-mcp serve offered no local socket")
        time.sleep(0.05)


def _ratio(walls: list[float], floors: list[float]) -> dict[str, Any]:
    return {"s": summary(walls), "floor_s": summary(floors),
            "ratio": statistics.median(walls) / statistics.median(floors)}


def measure(queries: int, warmup: int, kb: Path) -> dict[str, Any]:
    """Every figure of the step; ``kb`` is an indexed knowledge base."""
    qs = corpus.queries(queries + warmup, seed=17)
    warm, timed = qs[:warmup], qs[warmup:]
    starts = [_wall([sys.executable, "-c", "import sys"])[0] for _ in range(max(5, queries))]
    start = statistics.median(starts)
    out: dict[str, Any] = {"python_start_s": summary(starts), "queries": len(timed)}
    proc = subprocess.Popen([kb_mcp(), "serve", "--kb-path", str(kb), "--no-watch", "--quiet"],
                            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, env=_env())
    searched: dict[str, list[float]] = {}
    try:
        _wait_for_socket(kb, proc)
        for mode in ("hybrid", "lexical"):
            _through_server(kb, warm or timed[:1], mode)  # index open, model loaded
            walls, searched[mode] = _through_server(kb, timed, mode)
            out[f"server_{mode}"] = _ratio(walls, [start + s for s in searched[mode]])
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    walls = [_wall(_search(kb, q, "--mode", "lexical", "--no-server"))[0] for q in timed]
    out["local_lexical"] = _ratio(walls, [start + s for s in searched["lexical"]])
    few = timed[:3]
    out["local_hybrid_s"] = summary(
        [_wall(_search(kb, q, "--no-server"))[0] for q in few])
    out["load_average"] = os.getloadavg()
    return out


def rows(result: Any) -> list[Row]:
    """The table rows: measured / floor / ratio for each way of running the command."""
    if not isinstance(result, dict) or "server_hybrid" not in result:
        return []
    out = [Row("kb-mcp search from the shell (floor: bare python start + the search)",
               "", f"python start {ms(result['python_start_s']['median'])}, "
               f"{result['queries']} queries")]
    for key, name, goal in (("server_hybrid", "  answered by a running server, hybrid", GOAL),
                            ("server_lexical", "  answered by a running server, lexical", GOAL),
                            ("local_lexical", "  no server, --mode lexical", None)):
        r = result[key]
        out.append(Row(f"{name}: measured | floor | ratio",
                       f"{ms(r['s']['median'])} | {ms(r['floor_s']['median'])} | "
                       f"{r['ratio']:.2f}x", spread(r["s"], p95=True),
                       f"<= {goal}x" if goal else "",
                       verdict(r["ratio"] <= goal) if goal else ""))
    hyb = result["local_hybrid_s"]
    out.append(Row("  no server, hybrid (loads the model)", ms(hyb["median"]), spread(hyb)))
    return out
