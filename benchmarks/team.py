"""Team mode under load and faults: one writer, three read-only replicas, one PostgreSQL store.

The picture of docs/team-mode.md, on one machine: a throwaway PostgreSQL cluster holds the
index, a shared folder holds the vectors, `kb-mcp watch` is the writer, three
`kb-mcp serve --transport http --read-only` processes are the replicas, and client threads
play the load balancer's clients (bearer token, no sessions).

What it measures and checks:
1. while the writer indexes a growing folder, ``clients`` threads send ``searches`` searches
   each, round-robin over the live replicas: errors per replica, p50/p95 per replica;
2. half-way, one replica is SIGKILLed: only requests in flight on it may fail; the "load
   balancer" (the client threads) then drops it from the rotation;
3. once the writer is idle, every surviving replica answers a query sample identically;
4. the writer is SIGKILLed in the middle of a run; the next writer (`kb-mcp index`) resumes it:
   every file is indexed and `kb-mcp doctor` reports healthy.
"""

from __future__ import annotations

import http.client
import itertools
import json
import os
import re
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

from benchmarks import corpus
from benchmarks.measure import CHILD_ENV, jsonrpc_reply, kb_mcp, summary

#: Every wait ends by this many seconds.
DEADLINE = 600.0
READY = re.compile(r"streamable HTTP at http://\S+?:(\d+)/mcp")
PROTOCOL = "2025-11-25"


def _say(message: str) -> None:
    print(f"[bench] {message}", flush=True)


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "KB_MCP_TOKEN_HASHES"}
    return {**env, **CHILD_ENV}


class Replica:
    """One read-only `kb-mcp serve --transport http` process."""

    def __init__(self, name: str, config: Path, errlog: Path) -> None:
        self.name = name
        self._err = errlog.open("w", encoding="utf-8")
        self.proc = subprocess.Popen(
            [kb_mcp(), "serve", "--config", str(config), "--transport", "http", "--port", "0",
             "--read-only"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=self._err,
            env=_env(),
        )
        self.errlog = errlog
        self.port = self._wait_port()
        self.alive = True

    def _wait_port(self) -> int:
        deadline = time.monotonic() + DEADLINE
        while time.monotonic() < deadline:
            found = READY.search(self.errlog.read_text(encoding="utf-8", errors="replace"))
            if found:
                return int(found.group(1))
            if self.proc.poll() is not None:
                raise RuntimeError(f"replica {self.name} exited: {self.errlog.read_text()[-800:]}")
            time.sleep(0.05)
        raise RuntimeError(f"replica {self.name} did not start within {DEADLINE}s")

    def kill(self) -> None:
        self.alive = False
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=30)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=30)
        self._err.close()


def search_call(port: int, token: str, query: str, ident: int, limit: int = 5) -> list[str]:
    """One `search` tool call as its own stateless HTTP request; the hits' ids in order."""
    message = {"jsonrpc": "2.0", "id": ident, "method": "tools/call",
               "params": {"name": "search", "arguments": {"query": query, "limit": limit}}}
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    try:
        conn.request("POST", "/mcp", body=json.dumps(message).encode(), headers={
            "Content-Type": "application/json", "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": PROTOCOL, "Authorization": f"Bearer {token}"})
        response = conn.getresponse()
        body = response.read().decode("utf-8")
    finally:
        conn.close()
    if response.status != 200:
        raise RuntimeError(f"HTTP {response.status}: {body[:200]}")
    reply = jsonrpc_reply(body)
    result = reply.get("result")
    if not isinstance(result, dict) or result.get("isError"):
        raise RuntimeError(f"search failed: {str(reply)[:300]}")
    payload = result.get("structuredContent") or json.loads(result["content"][0]["text"])
    hits = payload.get("results", [])
    return [f"{h['path']}:{h.get('start_line')}:{h.get('heading')}:{h['score']:.4f}"
            for h in hits]


def _cli(config: Path, *args: str, timeout: float = DEADLINE) -> subprocess.CompletedProcess[str]:
    return subprocess.run([kb_mcp(), *args, "--config", str(config)], capture_output=True,
                          text=True, env=_env(), timeout=timeout, check=False)


def _documents(config: Path) -> int:
    out = _cli(config, "status", "--format", "json")
    if out.returncode != 0:
        return -1
    return int(json.loads(out.stdout).get("documents", -1))


def _wait_documents(config: Path, wanted: int, what: str) -> float:
    started = time.monotonic()
    while _documents(config) != wanted:
        if time.monotonic() - started > DEADLINE:
            raise RuntimeError(f"{what}: {_documents(config)} documents after {DEADLINE}s, "
                               f"wanted {wanted}")
        time.sleep(0.5)
    return time.monotonic() - started


def _healthy(config: Path) -> bool:
    out = _cli(config, "doctor", "--format", "json")
    return out.returncode == 0 and not json.loads(out.stdout).get("findings")


def _wait_idle(config: Path, wanted: int) -> float:
    """Seconds until the index holds ``wanted`` documents and doctor finds nothing to do
    (every chunk has its vector): the writer has caught up."""
    started = time.monotonic()
    _wait_documents(config, wanted, "writer catching up")
    while not _healthy(config):
        if time.monotonic() - started > DEADLINE:
            raise RuntimeError(f"doctor still reports findings after {DEADLINE}s")
        time.sleep(0.5)
    return time.monotonic() - started


def _stop(proc: subprocess.Popen[Any]) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=30)


def team_load(work: Path, *, files: int, growth: int, clients: int, searches: int,
              replicas: int = 3) -> dict[str, Any]:
    from tests.pg_cluster import start_cluster

    cluster = start_cluster()
    procs: list[Replica] = []
    writer: subprocess.Popen[Any] | None = None
    try:
        kb = work / "team-kb"
        corpus.generate(kb, files, seed=21)
        config = work / "team.toml"
        config.write_text(
            f'kb_path = "{kb}"\nindex_dir = "{work / "team-index"}"\n'
            f'database_url = "{cluster.new_database("team")}"\n'
            f'vectors_uri = "{work / "team-vectors"}"\n', encoding="utf-8")
        made = _cli(config, "token", "create", "bench")
        if made.returncode != 0:
            raise RuntimeError(f"token create failed: {made.stderr}")
        token = made.stdout.strip().splitlines()[-1]
        _say(f"team: first index of {files} files into PostgreSQL")
        first = _cli(config, "index")
        if first.returncode != 0:
            raise RuntimeError(f"kb-mcp index failed: {first.stderr[-800:]}")
        writer_log = (work / "team-writer.log").open("w", encoding="utf-8")
        writer = subprocess.Popen([kb_mcp(), "watch", "--config", str(config)],
                                  stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                  stderr=writer_log, text=True, env=_env())
        procs = [Replica(f"r{i + 1}", config, work / f"team-r{i + 1}.log")
                 for i in range(replicas)]
        _say(f"team: {replicas} read-only replicas up; {clients} clients x {searches} searches "
             f"while the writer indexes {growth} new files")
        queries = corpus.queries(searches, seed=31)
        for n, replica in enumerate(procs):  # load each replica's index and model first
            search_call(replica.port, token, queries[0], 8000 + n)
        latencies: dict[str, list[float]] = {r.name: [] for r in procs}
        errors: dict[str, list[str]] = {r.name: [] for r in procs}
        done = itertools.count()
        total = clients * searches
        lock = threading.Lock()
        victim = procs[-1]
        in_flight: dict[str, int] = {r.name: 0 for r in procs}
        in_flight_at_kill: dict[str, int] = {}
        start_gate = threading.Event()

        def client(n: int) -> None:
            start_gate.wait(DEADLINE)
            for i in range(searches):
                with lock:
                    live = [r for r in procs if r.alive]
                    replica = live[(n + i) % len(live)]
                    in_flight[replica.name] += 1
                started = time.perf_counter()
                try:
                    search_call(replica.port, token, queries[(n * 7 + i) % len(queries)],
                                n * searches + i)
                    latencies[replica.name].append(time.perf_counter() - started)
                except Exception as exc:  # counted, reported, judged below
                    errors[replica.name].append(f"{type(exc).__name__}: {exc}"[:200])
                finally:
                    with lock:
                        in_flight[replica.name] -= 1
                if next(done) == total // 2:
                    with lock:
                        in_flight_at_kill.update(in_flight)
                        victim.alive = False  # the balancer's health check drops it ...
                    victim.kill()  # ... as it dies

        def grow() -> None:
            start_gate.wait(DEADLINE)
            extra = work / "team-extra"
            corpus.generate(extra, growth, seed=22)
            for n, path in enumerate(sorted(extra.rglob("*.md"))):
                target = kb / "grown" / f"{n:05d}-{path.name}"
                target.parent.mkdir(parents=True, exist_ok=True)
                path.replace(target)
                time.sleep(0.05)

        threads = [threading.Thread(target=client, args=(n,)) for n in range(clients)]
        grower = threading.Thread(target=grow)
        for t in [*threads, grower]:
            t.start()
        load_started = time.perf_counter()
        start_gate.set()
        for t in [*threads, grower]:
            t.join(DEADLINE)
        load_s = time.perf_counter() - load_started
        survivors = [r for r in procs if r is not victim]
        idle_s = _wait_idle(config, files + growth)
        sample = corpus.queries(20, seed=41)
        answers = {r.name: [search_call(r.port, token, q, 9000 + i) for i, q in enumerate(sample)]
                   for r in survivors}
        fresh = Replica("r-new", config, work / "team-rnew.log")
        procs.append(fresh)
        answers[fresh.name] = [search_call(fresh.port, token, q, 9500 + i)
                               for i, q in enumerate(sample)]
        reference = answers[survivors[0].name]
        identical = all(a == reference for a in answers.values())
        differences = [(name, q, a[i][:3], reference[i][:3]) for name, a in answers.items()
                       for i, q in enumerate(sample) if a[i] != reference[i]][:3]

        _say("team: a writer killed mid-run, then resumed by the next writer")
        _stop(writer)  # the watcher hands over: the next writer is a plain `kb-mcp index`
        writer_log.close()
        more = work / "team-more"
        extra_files = max(40, growth)
        corpus.generate(more, extra_files, seed=23)
        for n, path in enumerate(sorted(more.rglob("*.md"))):
            target = kb / "more" / f"{n:05d}-{path.name}"
            target.parent.mkdir(parents=True, exist_ok=True)
            path.replace(target)
        expected = files + growth + extra_files
        before = _documents(config)
        writer = subprocess.Popen([kb_mcp(), "index", "--config", str(config), "--quiet"],
                                  stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL, env=_env())
        deadline = time.monotonic() + DEADLINE
        killed_at = before
        while time.monotonic() < deadline and writer.poll() is None:
            killed_at = _documents(config)
            if killed_at > before:  # it has written part of the new files: kill it now
                break
            time.sleep(0.02)
        # Still running when killed: in phase one (documents still missing) or in phase two
        # (every document written, vectors still being embedded).
        killed_mid_run = writer.poll() is None
        writer.send_signal(signal.SIGKILL)
        writer.wait(timeout=30)
        resumed = _cli(config, "index")
        doctor = _cli(config, "doctor", "--format", "json")
        findings = json.loads(doctor.stdout).get("findings", []) if doctor.stdout else ["?"]
        after = _documents(config)
        return {
            "files": files, "growth": growth, "clients": clients, "searches": searches,
            "load_s": load_s, "writer_idle_after_s": idle_s,
            "replicas": {name: {"latency_s": summary(lat), "errors": len(errors[name]),
                                "first_errors": errors[name][:3]}
                         for name, lat in latencies.items()},
            "killed_replica": victim.name,
            "killed_in_flight": in_flight_at_kill.get(victim.name, 0),
            "errors_elsewhere": sum(len(e) for n, e in errors.items() if n != victim.name),
            "identical_after_idle": identical,
            "replicas_compared": len(answers),
            "first_differences": differences,
            "writer_killed_with_documents": killed_at,
            "writer_killed_mid_run": killed_mid_run,
            "resume_exit": resumed.returncode,
            "documents_after_resume": after,
            "documents_expected": expected,
            "doctor_exit": doctor.returncode,
            "doctor_findings": [f.get("code", f) if isinstance(f, dict) else f
                                for f in findings],
        }
    finally:
        for r in procs:
            r.stop()
        if writer is not None:
            _stop(writer)
        cluster.stop()
