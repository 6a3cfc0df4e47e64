"""A read-only replica over HTTP whose PostgreSQL goes away and comes back: reads fail as
server failures (never "not offered"), the client never sees the database URL, the log
has one line per failure and no traceback, and the replica answers again afterwards."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kbmcp_adapters.app.bootstrap import bootstrap
from kbmcp_adapters.app.config import build_settings
from kbmcp_adapters.app.knowledge_base import KnowledgeBase
from kbmcp_core.errors import StoreUnreachable
from tests.e2e.conftest import Env, stop
from tests.e2e.http_support import Served, environment, start
from tests.fakes import FakeEmbedder, FakeVectorStore
from tests.pg_cluster import USER, PgCluster
from tests.pg_relay import Relay, relay_to

PASSWORD = "hunter2-pw"
INTERNAL_ERROR = -32603
DOC = "kb://doc/ops/deploy.md"


@pytest.fixture
def relay(pg_cluster: PgCluster) -> Iterator[Relay]:
    with relay_to(pg_cluster) as relayed:
        yield relayed


def _read(replica: Served, ident: int) -> dict[str, Any]:
    reply = replica.rpc("resources/read", {"uri": DOC}, ident=ident)
    assert reply is not None
    return reply


def _call(replica: Served, ident: int, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    reply = replica.rpc("tools/call", {"name": name, "arguments": arguments}, ident=ident)
    assert reply is not None
    return dict(reply["result"])


def test_a_replica_through_an_outage_answers_honestly_and_recovers(
        tmp_path: Path, pg_cluster: PgCluster, relay: Relay, server_env: Env) -> None:
    kb = tmp_path / "kb"
    (kb / "ops").mkdir(parents=True)
    (kb / "ops/deploy.md").write_text("---\ntitle: Deploying billing\n---\n# Deployment\n\n"
                                      "Blue-green deployments of the billing service.\n")
    database = pg_cluster.new_database().rsplit("/", 1)[1]
    url = f"postgresql+psycopg://{USER}:{PASSWORD}@127.0.0.1:{relay.port}/{database}"
    writer = KnowledgeBase(bootstrap(build_settings(None, cwd=kb, kb_path=kb, database_url=url),
                                     vectors=FakeVectorStore(), embedder=FakeEmbedder()))
    assert writer.index().added == 1
    writer.close()
    config = tmp_path / "kb-mcp.toml"
    config.write_text(f'kb_path = "{kb}"\ndatabase_url = "{url}"\n', encoding="utf-8")

    replica = start(kb, environment(server_env), "--config", str(config), "--read-only")
    try:
        assert "Deploying billing" in _read(replica, 1)["result"]["contents"][0]["text"]
        relay.cut()
        failed = _read(replica, 2)["error"]
        assert failed["code"] == INTERNAL_ERROR, failed
        told = [str(failed)]
        for n, (name, arguments) in enumerate([("get_document", {"path": "ops/deploy.md"}),
                                               ("list_topics", {})]):
            result = _call(replica, 3 + n, name, arguments)
            assert result["isError"], result
            text = result["content"][0]["text"]
            assert '"code": "store_error"' in text and StoreUnreachable.PUBLIC in text, text
            told.append(text)
        # the page's API answers with the same tools' errors
        status, _, body = replica.request("GET", "/ui/api/health")
        page = json.loads(body)["error"]
        assert status == 503 and page == {"code": "store_error",
                                           "message": StoreUnreachable.PUBLIC}, (status, page)
        for said in told:
            for secret in (PASSWORD, USER, str(relay.port), "127.0.0.1", database):
                assert secret not in said, (secret, said)
        relay.restore()
        assert "Deploying billing" in _read(replica, 9)["result"]["contents"][0]["text"]
    finally:
        stop(replica.proc)
    log = replica.log.drain()
    assert "Traceback" not in log, log
    errors = [line for line in log.splitlines() if "ERROR" in line]
    assert len(errors) == 4, errors  # one line per failed request
    for line in errors:
        assert f"{USER}:***@127.0.0.1:{relay.port}/{database}" in line, line
    assert PASSWORD not in log
