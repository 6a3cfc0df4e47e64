"""Fifty HTTP clients at once against one ``kb-mcp serve`` (issue 43, goal 3; decision 0057).

Each client holds an MCP session (``initialize``, then every call with its
``Mcp-Session-Id``) under one of five bearer tokens, on a keep-alive connection, and
until the end of the run sends, at random, a ``search`` (half of its calls) or a read (a
``get_document`` call or a ``resources/read`` of ``kb://doc/...``, a quarter each),
pausing a random 0-2 s between two calls (``PACE_S``). What
is measured, for the server of this checkout and, when the checkout still holds it, the
server of the code before decision 0057 (``cold_search.BEFORE``), one after the other:

- the floor: one client alone, the same mix, before the load (search and read p95);
- under load: errors, search p50/p95 against the single client's search p95 (the goal:
  at most 4x), read p95 against the single client's read p95 (reads queued behind
  searches show here), calls per second;
- the server's RSS sampled every second: its value after the first minute and at the end;
- the server's CPU seconds per call under load (user + system, summed over its processes):
  what a call costs, steadier than its latency on a shared machine.

Then the same load on one ``serve --read-only`` replica, and on two behind Debian's nginx
(round robin; ``tests/nginx_proxy.py``, the set-up of docs/team-mode.md): read-only
replicas keep no sessions, so any replica answers any call. The clients pace themselves,
so both offer the same calls: a second replica shows as the same calls answered sooner.

The opt-in ``clients50`` step of ``benchmarks.run`` (2.5 minutes a server, four runs; a quick run:
ten clients for 20 s). The index is built with the stand-in embedder under the real
model's identity: the server embeds each query with the real model.
"""

from __future__ import annotations

import http.client
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any
from urllib.parse import quote

from benchmarks import corpus
from benchmarks.measure import (
    BEFORE,
    CHILD_ENV,
    before_tree,
    cpu_seconds,
    http_port,
    jsonrpc_reply,
    kb_mcp,
    percentile,
    run_child,
    stop,
    worker,
)
from benchmarks.report import Row, ms, verdict

CLIENTS, QUICK_CLIENTS = 50, 10
SECONDS, QUICK_SECONDS = 150.0, 20.0
TOKENS = 5
GOAL_RATIO = 4.0
#: Each client's mean pause between two calls, in seconds (uniform from 0 to twice it):
#: fifty clients then offer about fifty calls a second. Clients that call again the moment
#: an answer arrives would measure only the queue (Little's law: with N of them waiting on
#: a saturated server, each call takes N / throughput, whatever the scheduling).
PACE_S = 1.0
PROTOCOL = "2025-11-25"


class Session:
    """One MCP client: its token, its session, one keep-alive connection."""

    def __init__(self, port: int, token: str, name: str) -> None:
        self._conn = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
        self._token = token
        self._session: str | None = None
        self._ids = 0
        reply, headers = self._post({"jsonrpc": "2.0", "id": self._next(), "method":
                                     "initialize", "params": {
                                         "protocolVersion": PROTOCOL, "capabilities": {},
                                         "clientInfo": {"name": name, "version": "1"}}})
        self._session = headers.get("mcp-session-id")
        if "result" not in reply:
            raise RuntimeError(f"initialize failed: {str(reply)[:300]}")
        self._post({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def _next(self) -> int:
        self._ids += 1
        return self._ids

    def _post(self, message: dict[str, Any]) -> tuple[dict[str, Any], dict[str, str]]:
        headers = {"Content-Type": "application/json",
                   "Accept": "application/json, text/event-stream",
                   "MCP-Protocol-Version": PROTOCOL, "Authorization": f"Bearer {self._token}"}
        if self._session:
            headers["Mcp-Session-Id"] = self._session
        self._conn.request("POST", "/mcp", body=json.dumps(message).encode(), headers=headers)
        response = self._conn.getresponse()
        body = response.read().decode("utf-8")
        got = {k.lower(): v for k, v in response.getheaders()}
        if response.status not in (200, 202):
            raise RuntimeError(f"HTTP {response.status}: {body[:200]}")
        return (jsonrpc_reply(body) if "id" in message else {}), got

    def call(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        reply, _ = self._post({"jsonrpc": "2.0", "id": self._next(), "method": method,
                               "params": params})
        result = reply.get("result")
        if not isinstance(result, dict) or result.get("isError"):
            raise RuntimeError(f"{method} failed: {str(reply)[:300]}")
        return result

    def close(self) -> None:
        self._conn.close()


def _one_call(session: Session, rng: random.Random, queries: list[str], paths: list[str]
              ) -> str:
    """One call of the mix; its kind."""
    pick = rng.random()
    if pick < 0.5:
        session.call("tools/call", {"name": "search", "arguments": {
            "query": rng.choice(queries), "limit": 5}})
        return "search"
    path = rng.choice(paths)
    if pick < 0.75:
        session.call("tools/call", {"name": "get_document", "arguments": {"path": path}})
    else:
        session.call("resources/read", {"uri": "kb://doc/" + quote(path)})
    return "read"


def _client(port: int, token: str, n: int, until: float, queries: list[str],
            paths: list[str], out: list[tuple[str, float, float, bool]]) -> None:
    rng = random.Random(n)
    try:
        session = Session(port, token, f"bench-{n}")
    except Exception:  # noqa: BLE001 (counted as an error of the run)
        out.append(("initialize", time.monotonic(), 0.0, False))
        return
    try:
        while time.monotonic() < until:
            started = time.monotonic()
            try:
                kind = _one_call(session, rng, queries, paths)
                out.append((kind, started, time.monotonic() - started, True))
            except Exception:  # noqa: BLE001
                out.append(("error", started, time.monotonic() - started, False))
            # an agent's pace, not a loop as fast as the server answers (see PACE_S)
            time.sleep(max(0.0, min(rng.uniform(0, 2 * PACE_S), until - time.monotonic())))
    finally:
        session.close()


def _rss_mb(pid: int) -> float | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def _serve(kb: Path, errlog: Path, before: Path | None, *extra: str
           ) -> subprocess.Popen[bytes]:
    env = {**os.environ, **CHILD_ENV}
    args = [kb_mcp(), "serve", "--kb-path", str(kb), "--transport", "http", "--port", "0",
            "--no-watch", "--max-sessions-per-client", "200", *extra]
    if before is not None:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(before), env.get("PYTHONPATH")]))
        args = [sys.executable, "-m", "kbmcp_cli", *args[1:]]
    with errlog.open("wb") as err:
        return subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=err, env=env, cwd="/")


def _p95(samples: list[float]) -> float:
    return percentile(sorted(samples), 95) if samples else float("nan")


def _run_server(kb: Path, work: Path, tokens: list[str], label: str, before: Path | None, *,
                clients: int, seconds: float, queries: list[str], paths: list[str]
                ) -> dict[str, Any]:
    errlog = work / f"serve-{label}.log"
    proc = _serve(kb, errlog, before)
    try:
        return drive(http_port(proc, errlog), [proc.pid], tokens, clients=clients,
                     seconds=seconds, queries=queries, paths=paths)
    finally:
        stop(proc, timeout=60)


def drive(port: int, pids: list[int], tokens: list[str], *, clients: int, seconds: float,
          queries: list[str], paths: list[str]) -> dict[str, Any]:
    """One client alone (the floor), then ``clients`` at once for ``seconds`` against the
    server (or the proxy) on ``port``; the RSS summed over ``pids`` every second."""
    alone = Session(port, tokens[0], "alone")
    rng = random.Random(1)
    single: dict[str, list[float]] = {"search": [], "read": []}
    for _ in range(5):  # the index opened, the model loaded
        _one_call(alone, rng, queries, paths)
    while min(len(v) for v in single.values()) < 30:
        started = time.monotonic()
        kind = _one_call(alone, rng, queries, paths)
        single[kind].append(time.monotonic() - started)
    alone.close()
    calls: list[tuple[str, float, float, bool]] = []
    cpu_before = [cpu_seconds(pid) for pid in pids]
    start = time.monotonic()
    until = start + seconds
    threads = [threading.Thread(target=_client, args=(port, tokens[n % len(tokens)], n,
                                                      until, queries, paths, calls))
               for n in range(clients)]
    for t in threads:
        t.start()
    rss: list[tuple[float, float]] = []
    while any(t.is_alive() for t in threads):
        values = [_rss_mb(pid) for pid in pids]
        if all(v is not None for v in values):
            rss.append((time.monotonic() - start, sum(v for v in values if v is not None)))
        time.sleep(1.0)
    for t in threads:
        t.join()
    wall = time.monotonic() - start
    cpu_after = [cpu_seconds(pid) for pid in pids]
    used = sum(b - a for a, b in zip(cpu_before, cpu_after, strict=True)
               if a is not None and b is not None)
    searches = [c[2] for c in calls if c[0] == "search"]
    reads = [c[2] for c in calls if c[0] == "read"]
    after_minute = [v for t, v in rss if t >= min(60.0, seconds / 2)]
    return {
        "clients": clients, "seconds": wall, "calls": len(calls),
        "errors": sum(1 for c in calls if not c[3]),
        "calls_per_s": len(calls) / wall,
        "single_search_p95_s": _p95(single["search"]),
        "single_read_p95_s": _p95(single["read"]),
        "search_p50_s": statistics.median(searches) if searches else float("nan"),
        "search_p95_s": _p95(searches), "read_p95_s": _p95(reads),
        "searches": len(searches), "reads": len(reads),
        "rss_first_minute_mb": after_minute[0] if after_minute else None,
        "rss_end_mb": rss[-1][1] if rss else None,
        "rss_max_mb": max((v for _, v in rss), default=None),
        "server_cpu_s": used,
        "cpu_ms_per_call": 1000 * used / len(calls) if calls else float("nan"),
        "load_average": os.getloadavg(),
    }


def measure(work: Path, *, quick: bool = False) -> dict[str, Any]:
    """Now and, when the checkout holds it, before (``BEFORE``): one server after the other;
    then one read-only replica, and two behind nginx (when it is installed)."""
    kb = work / "many-clients"
    if kb.exists():
        shutil.rmtree(kb)
    info = corpus.generate(kb, 40 if quick else 200, seed=71)
    run_child(worker("build", kb=str(kb)), timeout=7200.0)
    paths = sorted(p.relative_to(kb).as_posix() for p in kb.rglob("*.md")
                   if ".kb-mcp" not in p.parts)
    tokens = []
    for n in range(TOKENS):
        made = subprocess.run([kb_mcp(), "token", "create", f"bench-{n}", "--kb-path", str(kb)],
                              capture_output=True, text=True, check=True, timeout=120,
                              env={**os.environ, **CHILD_ENV})
        tokens.append(made.stdout.strip().splitlines()[-1])
    load: dict[str, Any] = {"clients": QUICK_CLIENTS if quick else CLIENTS,
                            "seconds": QUICK_SECONDS if quick else SECONDS,
                            "queries": corpus.queries(200, seed=72), "paths": paths}
    out: dict[str, Any] = {"files": info.files}
    servers = {"now": None, "before": before_tree(work)}
    for label, before in servers.items():
        if label == "before" and before is None:
            continue
        out[label] = _run_server(kb, work, tokens, label, before, **load)
    out.update(_replicas(kb, work, tokens, load))
    return out


def _replicas(kb: Path, work: Path, tokens: list[str], load: dict[str, Any]
              ) -> dict[str, Any]:
    """The same load on one ``serve --read-only`` replica, then on two behind nginx's round
    robin (read-only replicas keep no sessions, so any replica answers any request)."""
    from tests.nginx_proxy import NGINX, start_proxy

    if NGINX is None:
        return {"replicas": "nginx is not installed (apt-get install nginx-light)"}
    out: dict[str, Any] = {}
    for count in (1, 2):
        # as docs/team-mode.md runs them behind a proxy: the name the clients use allowed
        # with any port, the proxy's address trusted
        procs = [_serve(kb, work / f"replica-{count}-{n}.log", None, "--read-only",
                        "--allowed-host", "127.0.0.1", "--trusted-proxy", "127.0.0.1")
                 for n in range(count)]
        proxy = None
        try:
            ports = [http_port(p, work / f"replica-{count}-{n}.log")
                     for n, p in enumerate(procs)]
            port = ports[0]
            if count > 1:
                proxy, port = start_proxy(work / "nginx", ports, 60.0)
            out[f"replicas{count}"] = drive(port, [p.pid for p in procs], tokens, **load)
        finally:
            if proxy is not None:
                stop(proxy, timeout=30)
            for proc in procs:
                stop(proc, timeout=60)
    return out


def rows(result: Any) -> list[Row]:
    """Errors, search p95 against one client's, reads' p95 against one client's, RSS."""
    if not isinstance(result, dict) or "now" not in result:
        return []
    out = []
    for label in ("now", "before"):
        got = result.get(label)
        if not isinstance(got, dict):
            continue
        ratio = got["search_p95_s"] / got["single_search_p95_s"]
        reads = got["read_p95_s"] / got["single_read_p95_s"]
        name = "this checkout" if label == "now" else f"before ({BEFORE})"
        out.append(Row(
            f"{got['clients']} HTTP clients, {name}: search p95 | one client's | ratio",
            f"{ms(got['search_p95_s'])} | {ms(got['single_search_p95_s'])} | {ratio:.1f}x",
            f"{got['errors']} errors, {got['calls_per_s']:.1f} calls/s, "
            f"{_cpu(got)}load {got['load_average'][0]:.1f}",
            f"<= {GOAL_RATIO:.0f}x, 0 errors",
            verdict(ratio <= GOAL_RATIO and got["errors"] == 0)))
        out.append(Row(
            "  reads: p95 under load | one client's | ratio",
            f"{ms(got['read_p95_s'])} | {ms(got['single_read_p95_s'])} | {reads:.1f}x",
            f"{got['reads']} reads, {got['searches']} searches"))
        first, end = got.get("rss_first_minute_mb"), got.get("rss_end_mb")
        if first and end:
            out.append(Row("  server RSS: after the first minute | at the end",
                           f"{first:.0f} MB | {end:.0f} MB",
                           f"max {got['rss_max_mb']:.0f} MB"))
    one, two = result.get("replicas1"), result.get("replicas2")
    if isinstance(one, dict) and isinstance(two, dict):
        # the clients pace themselves, so the calls offered are alike: what a second replica
        # adds shows as the same calls answered sooner (and more of them once one saturates)
        faster = one["search_p95_s"] / two["search_p95_s"]
        out.append(Row(
            "read-only replicas, one | two behind nginx: search p95 | ratio",
            f"{ms(one['search_p95_s'])} | {ms(two['search_p95_s'])} | {faster:.2f}x",
            f"calls/s {one['calls_per_s']:.1f} | {two['calls_per_s']:.1f}; {_cpu(one)}"
            f"{one['errors']} + {two['errors']} errors",
            "two answer sooner, 0 errors",
            verdict(faster > 1.0 and two["calls_per_s"] >= 0.98 * one["calls_per_s"]
                    and one["errors"] + two["errors"] == 0)))
        out.append(Row(
            "  reads p95, one | two replicas; RSS at the end (all replicas)",
            f"{ms(one['read_p95_s'])} | {ms(two['read_p95_s'])}",
            f"{one['rss_end_mb'] or 0:.0f} MB | {two['rss_end_mb'] or 0:.0f} MB"))
    elif isinstance(result.get("replicas"), str):
        out.append(Row("read-only replicas behind nginx", "not measured", result["replicas"]))
    return out


def _cpu(got: dict[str, Any]) -> str:
    """The server's CPU per call, when measured (older results have none)."""
    per_call = got.get("cpu_ms_per_call")
    return f"{per_call:.1f} ms CPU a call, " if isinstance(per_call, float) else ""
