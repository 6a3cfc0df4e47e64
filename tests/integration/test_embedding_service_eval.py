"""An index built through an embedding service scores as the same model run in process.

The loopback service (tests/embedding_server.py) computes its vectors with the packaged
default model; the eval fixture indexed through it and indexed in process must give the
same nDCG@10 on the golden set (within ``SAME``), for each retriever and both levels: the
service route loses nothing (chunking, prefixes, order, normalisation) on the way (0037).
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from kbmcp_adapters.app.bootstrap import bootstrap
from kbmcp_adapters.app.config import build_settings
from kbmcp_adapters.app.knowledge_base import KnowledgeBase
from kbmcp_adapters.embedding.fastembed_embedder import FastEmbedEmbedder
from kbmcp_adapters.evaluation.golden import load_golden
from kbmcp_core.evaluation import EvalReport
from kbmcp_core.search_request import MODES
from tests.embedding_server import EmbeddingServer
from tests.eval_support import measure, table

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "eval-kb"
GOLDEN = FIXTURE.with_name("eval-kb.golden.yml")
#: The most nDCG@10 may differ between the two routes.
SAME = 0.005


def _copy(tmp: Path, name: str) -> Path:
    root = tmp / name / "eval-kb"
    shutil.copytree(FIXTURE, root, ignore=shutil.ignore_patterns(".kb-mcp"))
    return root


@pytest.fixture(scope="module")
def both(tmp_path_factory: pytest.TempPathFactory, embedder: FastEmbedEmbedder
         ) -> Iterator[tuple[dict[str, EvalReport], dict[str, EvalReport], EmbeddingServer]]:
    """The golden set measured on the fixture indexed in process and through the service."""
    tmp = tmp_path_factory.mktemp("service-eval")
    queries = load_golden(GOLDEN)
    with EmbeddingServer(embedder) as server:
        local_root, remote_root = _copy(tmp, "local"), _copy(tmp, "remote")
        local = KnowledgeBase(bootstrap(build_settings(None, cwd=local_root,
                                                       kb_path=local_root),
                                        embedder=embedder))
        remote = KnowledgeBase(bootstrap(build_settings(
            None, cwd=remote_root, kb_path=remote_root,
            embedding_provider="openai-compatible", embedding_base_url=server.base_url,
            embedding_model="all-minilm", embedding_dimension=384)))
        try:
            for kb in (local, remote):
                summary = kb.index()
                assert (summary.failed, summary.skipped) == (0, 0), summary.warnings
            yield measure(local, queries), measure(remote, queries), server
        finally:
            local.close()
            remote.close()


def test_the_service_route_gives_the_same_ndcg_as_the_model_in_process(
        both: tuple[dict[str, EvalReport], dict[str, EvalReport], EmbeddingServer]) -> None:
    local, remote, server = both
    assert server.embedded(), "the remote index did not go through the service"
    for mode in MODES:
        for level in ("document", "section"):
            a = getattr(local[mode], level)["ndcg@10"]
            b = getattr(remote[mode], level)["ndcg@10"]
            assert abs(a - b) <= SAME, (mode, level, a, b, table(local), table(remote))
    # quality, not plumbing: the vector leg through the service finds answers
    assert remote["vector"].document["ndcg@10"] > 0.5, table(remote)
