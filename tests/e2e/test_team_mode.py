"""Team mode end to end: index a folder into PostgreSQL + LanceDB on S3 (moto on loopback),
then two read-only HTTP replicas answer the same top results, and only with a token."""

from __future__ import annotations

import os
import subprocess
import urllib.request
from pathlib import Path
from typing import Any

from tests.e2e.conftest import Env, make_corpus, stop
from tests.e2e.http_support import Served, environment, start
from tests.pg_cluster import PgCluster
from tests.s3_server import FAKE_SECRET, S3Server
from tests.store_faults import kb_mcp_here


def kb_mcp(env: Env, *args: str) -> subprocess.CompletedProcess[str]:
    """A command in this process: the index, the token and the checks around the replicas,
    which are the processes under test (a command's process boundary, and what LanceDB
    logs to it, is ``test_vectors_uri``'s)."""
    return kb_mcp_here(list(args), {**os.environ, **env})


def search(replica: Served, token: str, query: str, ident: int) -> list[dict[str, Any]]:
    reply = replica.rpc("tools/call", {"name": "search", "arguments": {"query": query,
                                                                       "limit": 5}},
                        ident=ident, headers={"Authorization": f"Bearer {token}"})
    assert reply is not None and not reply["result"].get("isError"), reply
    return list(reply["result"]["structuredContent"]["results"])


def bucket_keys(s3: S3Server, bucket: str) -> str:
    with urllib.request.urlopen(f"{s3.endpoint}/{bucket}?list-type=2", timeout=30) as answer:
        return str(answer.read().decode("utf-8"))


def test_postgresql_and_s3_serve_two_replicas_the_same_answers_only_with_a_token(
        tmp_path: Path, pg_cluster: PgCluster, s3_server: S3Server, server_env: Env) -> None:
    kb = make_corpus(tmp_path)
    database = pg_cluster.new_database("team")
    bucket = s3_server.new_bucket()
    config = tmp_path / "kb-mcp.toml"
    config.write_text(f'kb_path = "{kb}"\ndatabase_url = "{database}"\n'
                      f'vectors_uri = "s3://{bucket}/handbook"\n', encoding="utf-8")
    env = environment(server_env, **s3_server.environment())

    indexed = kb_mcp(env, "index", "--config", str(config))
    assert indexed.returncode == 0, indexed.stderr
    index_dir = kb / ".kb-mcp"
    assert not (index_dir / "index.db").exists() and not (index_dir / "vectors").exists()
    assert "handbook/chunks.lance/" in bucket_keys(s3_server, bucket)
    made = kb_mcp(env, "token", "create", "alice", "--config", str(config))
    assert made.returncode == 0, made.stderr
    token = made.stdout.strip()
    assert token.startswith("kbm_") and token not in (index_dir / "tokens.json").read_text()

    empty = tmp_path / "replica-folder"  # a replica on another machine, without the files
    empty.mkdir()
    replicas: list[Served] = []
    try:
        replicas.append(start(kb, env, "--config", str(config), "--read-only"))
        replicas.append(start(empty, env, "--config", str(config), "--read-only",
                              "--tokens-file", str(index_dir / "tokens.json")))
        for replica in replicas:
            status, headers, _ = replica.request("POST", "/mcp", {
                "jsonrpc": "2.0", "id": 1, "method": "tools/list"})
            assert status == 401 and headers["www-authenticate"].startswith("Bearer")
            status, _, _ = replica.request("POST", "/mcp", {
                "jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                {"Authorization": "Bearer kbm_not-a-token"})
            assert status == 401
            assert replica.request("GET", "/healthz")[0] == 200

        for n, query in enumerate(["rotate the signing keys", "nightly database backups",
                                   "where does basil grow"]):
            answers = [search(r, token, query, 10 + n) for r in replicas]
            assert answers[0], query
            assert answers[0] == answers[1], query
        top = search(replicas[1], token, "rotate the signing keys with the vault CLI", 20)
        assert top[0]["path"] == "guides/keys.md"

        doctor = kb_mcp(env, "doctor", "--config", str(config), "--format", "json")
        assert doctor.returncode == 0, doctor.stdout + doctor.stderr
        status_out = kb_mcp(env, "status", "--config", str(config))
        for out in (indexed, made, doctor, status_out):
            assert FAKE_SECRET not in out.stdout + out.stderr
    finally:
        for replica in replicas:
            stop(replica.proc)
            replica.log.drain()
    logs = "".join(line for r in replicas for line in r.log.lines)
    assert FAKE_SECRET not in logs and "Traceback" not in logs
