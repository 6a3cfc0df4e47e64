"""Timing helpers: summary statistics and child processes measured from outside (wall, peak RSS)."""

from __future__ import annotations

import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: The environment of every child: offline, unbuffered, no tokenizer thread pool surprises.
CHILD_ENV = {"HF_HUB_OFFLINE": "1", "PYTHONUNBUFFERED": "1", "TOKENIZERS_PARALLELISM": "false"}
REPO = Path(__file__).resolve().parent.parent
#: The last commit before decision 0057 (fastembed, two model sessions, vectors opened in
#: turn, searches on anyio's one thread pool): the "before" of issue 43's rows, unless
#: ``$KB_BENCH_BEFORE`` names another commit (a change's own base, to show what it alone
#: did: ``KB_BENCH_BEFORE=1cd22dc``, decision 0057's addendum of session 16).
BEFORE = os.environ.get("KB_BENCH_BEFORE") or "d267cf1"


def summary(samples: list[float]) -> dict[str, float | int]:
    """Median and spread of seconds (or any unit): n, median, min, max, p95, mean."""
    if not samples:
        return {"n": 0}
    ordered = sorted(samples)
    return {
        "n": len(ordered),
        "median": statistics.median(ordered),
        "min": ordered[0],
        "max": ordered[-1],
        "p95": percentile(ordered, 95),
        "mean": statistics.fmean(ordered),
    }


def percentile(ordered: list[float], pct: float) -> float:
    """Linear-interpolated percentile of an already sorted list."""
    if len(ordered) == 1:
        return ordered[0]
    rank = (len(ordered) - 1) * pct / 100.0
    low = int(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


@dataclass(frozen=True, slots=True)
class ChildResult:
    """One child process: its wall time from spawn to exit, peak RSS, and its JSON answer."""

    wall_s: float
    max_rss_mb: float
    data: dict[str, Any]
    #: CPU seconds (user + system) of the child and the children it waited for
    cpu_s: float = 0.0


def run_child(args: list[str], *, timeout: float = 1800.0) -> ChildResult:
    """Run a command; ``data`` is the JSON object it wrote to the file named by
    ``$BENCH_RESULT`` (empty when it wrote none). Peak RSS comes from ``wait4``."""
    with tempfile.TemporaryDirectory(prefix="kbbench-child-") as scratch:
        result_file = Path(scratch) / "result.json"
        log_file = Path(scratch) / "output.log"
        env = {**os.environ, **CHILD_ENV, "BENCH_RESULT": str(result_file)}
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
        with log_file.open("wb") as log:
            started = time.perf_counter()
            proc = subprocess.Popen(
                args,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=env,
                cwd=scratch,
            )
            status, usage = _wait4(proc, started + timeout)
            wall = time.perf_counter() - started
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode != 0:
            tail = log_file.read_text(encoding="utf-8", errors="replace")[-3000:]
            raise RuntimeError(f"{' '.join(args[:4])} ... exited {proc.returncode}:\n{tail}")
        data = json.loads(result_file.read_text()) if result_file.exists() else {}
    return ChildResult(wall, usage.ru_maxrss / 1024.0, data, usage.ru_utime + usage.ru_stime)


def _wait4(proc: subprocess.Popen[bytes], deadline: float) -> tuple[int, Any]:
    """The child's exit status and usage; a child past ``deadline``, or one whose bench is
    stopped (Ctrl-C, SIGTERM), is killed and reaped, never left running."""
    try:
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid == proc.pid:
                return status, usage
            if time.perf_counter() > deadline:
                raise RuntimeError(f"child {proc.args!r} timed out")
            time.sleep(0.005)
    except BaseException:
        proc.kill()
        proc.returncode = os.waitstatus_to_exitcode(os.wait4(proc.pid, 0)[1])
        raise


def worker(task: str, **params: Any) -> list[str]:
    """The command line that runs one task of ``benchmarks.worker`` in a fresh interpreter."""
    return [sys.executable, "-m", "benchmarks.worker", task, json.dumps(params)]


def kb_mcp() -> str:
    """The installed console script next to this interpreter."""
    return str(Path(sys.executable).with_name("kb-mcp"))


def own_peak_rss_mb() -> float | None:
    """This process's own peak RSS since it started (``VmHWM``), in MB. Unlike
    ``ru_maxrss``, which Linux carries over from the parent at fork and exec (a child of
    a 1 GB parent reports at least 1 GB), it counts only this program's memory (0045)."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return None


def cpu_seconds(pid: int) -> float | None:
    """CPU seconds (user + system) process ``pid`` has used so far, or None once it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def write_result(data: dict[str, Any]) -> None:
    """Called in a child: hand ``data`` back to ``run_child``, with the child's own peak
    RSS under ``own_peak_rss_mb``."""
    target = os.environ.get("BENCH_RESULT")
    if target:
        Path(target).write_text(json.dumps({**data, "own_peak_rss_mb": own_peak_rss_mb()}))


def child_main(index: Callable[[dict[str, Any]], None], search: Callable[[dict[str, Any]], None],
               measure: Callable[..., dict[str, Any]]) -> None:
    """The ``__main__`` of a step whose children index and search: ``index JSON`` and
    ``search JSON`` run those halves (in a child ``run_child`` started); ``WORK [--quick]``
    runs the whole step here and prints its figures."""
    if sys.argv[1:2] == ["index"]:
        index(json.loads(sys.argv[2]))
    elif sys.argv[1:2] == ["search"]:
        search(json.loads(sys.argv[2]))
    else:
        print(json.dumps(measure(Path(sys.argv[1]), quick="--quick" in sys.argv), indent=1))


def index_folder(kb: str) -> None:
    """Called in a child: index the folder ``kb`` (its own config decides the rest) and
    hand back nothing but the child's peak RSS."""
    from kbmcp_adapters.app.knowledge_base import open_knowledge_base

    opened = open_knowledge_base(Path(kb))
    try:
        opened.index()
    finally:
        opened.close()
    write_result({})


def before_tree(work: Path) -> Path | None:
    """The code of ``BEFORE``, exported once under ``work``; None outside a git checkout."""
    tree = work / f"before-{BEFORE}"
    if (tree / "kbmcp_cli").is_dir():
        return tree
    if shutil.which("git") is None or not (REPO / ".git").exists():
        return None
    tree.mkdir(parents=True, exist_ok=True)
    archive = subprocess.run(["git", "-C", str(REPO), "archive", BEFORE], capture_output=True,
                             check=False)
    if archive.returncode != 0:
        return None
    subprocess.run(["tar", "-x", "-C", str(tree)], input=archive.stdout, check=True)
    return tree


def jsonrpc_reply(body: str) -> dict[str, Any]:
    """The JSON-RPC reply in an MCP HTTP answer: a JSON body, or the event stream's message
    that carries an ``id``."""
    if body.lstrip().startswith("{"):
        return dict(json.loads(body))
    for line in body.splitlines():
        if line.startswith("data:") and line[5:].strip():
            found = json.loads(line[5:])
            if "id" in found:
                return dict(found)
    raise RuntimeError(f"no JSON-RPC reply in {body[:200]!r}")


def http_port(proc: subprocess.Popen[bytes], errlog: Path, deadline: float = 600.0) -> int:
    """The port a ``kb-mcp serve --transport http --port 0`` says it listens on (stderr in
    ``errlog``), once it says so; raises when it exits first or the deadline passes."""
    end = time.monotonic() + deadline
    while time.monotonic() < end and proc.poll() is None:
        found = re.search(r"streamable HTTP at http://\S+?:(\d+)/mcp",
                          errlog.read_text(encoding="utf-8", errors="replace"))
        if found:
            return int(found.group(1))
        time.sleep(0.05)  # polling a log file, bounded by the deadline
    raise RuntimeError(f"kb-mcp serve did not start: {errlog.read_text()[-500:]}")


def stop(proc: subprocess.Popen[Any], timeout: float = 30.0) -> None:
    """SIGTERM, then SIGKILL after ``timeout``; the process reaped either way."""
    proc.terminate()
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=timeout)
