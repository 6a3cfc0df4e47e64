"""The embedding-service adapter against a real HTTP server on loopback (decision 0037):
real vectors of the packaged model, then each fault the service can show."""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import replace

import pytest

from kbmcp_adapters.embedding.fastembed_embedder import FastEmbedEmbedder
from kbmcp_adapters.embedding.service_config import ServiceConfig
from kbmcp_adapters.embedding.service_embedder import ServiceEmbedder
from kbmcp_core.errors import EmbeddingRejected, EmbeddingUnavailable, EmbeddingUnreachable
from tests.embedding_server import EmbeddingServer

KEY = "sk-test-7f3a9c1e5b2d4f60"
TEXTS = ["The cat sat on the mat.", "Quarterly revenue grew by ten percent.",
         "Kittens like to play with yarn.", "Rollbacks redeploy the previous tag."]


@pytest.fixture
def server(embedder: FastEmbedEmbedder) -> Iterator[EmbeddingServer]:
    with EmbeddingServer(embedder) as s:
        yield s


def config(server: EmbeddingServer, **changes: object) -> ServiceConfig:
    base = ServiceConfig(base_url=server.base_url, document_model="minilm-doc",
                         query_model="minilm-query", dimension=384, timeout_s=10.0,
                         retries=2, batch_size=8)
    return replace(base, **changes)  # type: ignore[arg-type]


def service(server: EmbeddingServer, embedder: FastEmbedEmbedder,
            **changes: object) -> ServiceEmbedder:
    return ServiceEmbedder(config(server, **changes), embedder)


def cosine(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


def test_vectors_through_the_service_are_the_models_own(
        server: EmbeddingServer, embedder: FastEmbedEmbedder) -> None:
    remote = service(server, embedder, document_prefix="passage: ", query_prefix="query: ")
    got = remote.embed_documents(TEXTS)
    local = embedder.embed_documents(["passage: " + t for t in TEXTS])
    assert len(got) == len(TEXTS)
    for a, b in zip(got, local, strict=True):
        assert math.isclose(math.sqrt(sum(x * x for x in a)), 1.0, abs_tol=1e-5)
        assert cosine(a, b) > 0.9999
    q = remote.embed_query("a small cat")
    assert cosine(q, got[2]) > cosine(q, got[1])  # meaning, not plumbing
    models = [s.model for s in server.embedded()]
    assert models == ["minilm-doc", "minilm-query"]
    assert server.embedded()[1].inputs == ("query: a small cat",)


def test_identity_names_provider_models_prefixes_and_dimension(
        server: EmbeddingServer, embedder: FastEmbedEmbedder) -> None:
    one = service(server, embedder, query_prefix="q: ").model_id
    assert one == ('openai-compatible:minilm-doc;query_model=minilm-query;'
                   'query_prefix="q: ";dimension=384')
    assert service(server, embedder, query_prefix="").model_id != one
    assert service(server, embedder, query_prefix="q: ", dimension=768).model_id != one
    assert server.seen == []  # the identity costs no request


def test_the_key_comes_from_the_named_variable_and_is_in_no_message(
        embedder: FastEmbedEmbedder, monkeypatch: pytest.MonkeyPatch) -> None:
    with EmbeddingServer(embedder, key=KEY) as server:
        remote = service(server, embedder, api_key_env="KBMCP_TEST_KEY")
        monkeypatch.delenv("KBMCP_TEST_KEY", raising=False)
        with pytest.raises(EmbeddingUnavailable, match="KBMCP_TEST_KEY, which is not set"):
            remote.embed_documents(TEXTS[:1])
        monkeypatch.setenv("KBMCP_TEST_KEY", KEY)
        assert len(remote.embed_documents(TEXTS[:1])) == 1
        assert server.embedded()[-1].authorized
        monkeypatch.setenv("KBMCP_TEST_KEY", KEY + "-wrong")
        with pytest.raises(EmbeddingUnavailable) as refused:
            remote.embed_documents(TEXTS[:1])
        assert "HTTP 401" in str(refused.value) and "$KBMCP_TEST_KEY" in str(refused.value)
        assert KEY not in str(refused.value) and KEY not in repr(refused.value.__cause__)


def test_429_is_retried_after_the_wait_the_service_asks_for(
        server: EmbeddingServer, embedder: FastEmbedEmbedder) -> None:
    server.fail(429, times=1, retry_after="1")
    got = service(server, embedder).embed_documents(TEXTS)
    assert len(got) == len(TEXTS)
    refused, answered = server.seen
    assert refused.model == "<refused>" and answered.model == "minilm-doc"
    assert answered.at - refused.at >= 1.0  # Retry-After: 1 was honoured


def test_5xx_is_retried_then_the_service_counts_as_unreachable(
        server: EmbeddingServer, embedder: FastEmbedEmbedder) -> None:
    server.fail(500, times=2)
    assert len(service(server, embedder).embed_documents(TEXTS)) == len(TEXTS)
    server.always = 503
    with pytest.raises(EmbeddingUnreachable, match=r"HTTP 503.*after 3 tries"):
        service(server, embedder).embed_documents(TEXTS)
    assert len(server.seen) == 2 + 1 + 3


def test_an_answer_slower_than_the_timeout_is_a_timeout(
        server: EmbeddingServer, embedder: FastEmbedEmbedder) -> None:
    server.delay_s = 5.0
    remote = service(server, embedder, timeout_s=0.3, retries=1)
    with pytest.raises(EmbeddingUnreachable, match=r"no answer within 0.3 s after 2 tries"):
        remote.embed_documents(TEXTS[:1])
    with pytest.raises(EmbeddingUnreachable):  # a query tries once
        remote.embed_query("anything")


def test_vectors_of_another_dimension_are_refused_with_the_fix(
        server: EmbeddingServer, embedder: FastEmbedEmbedder) -> None:
    server.cut_to = 256
    with pytest.raises(EmbeddingUnavailable) as wrong:
        service(server, embedder).embed_documents(TEXTS)
    assert "vectors of 256 dimensions but [embedding].dimension is 384" in str(wrong.value)
    assert not isinstance(wrong.value, EmbeddingUnreachable)


def test_413_on_a_big_batch_splits_it_until_it_passes(
        server: EmbeddingServer, embedder: FastEmbedEmbedder) -> None:
    server.max_batch = 2
    texts = [f"{t} ({i})" for i, t in enumerate(TEXTS * 2)]
    got = service(server, embedder, batch_size=8).embed_documents(texts)
    local = embedder.embed_documents(texts)
    assert all(cosine(a, b) > 0.9999 for a, b in zip(got, local, strict=True))
    assert max(len(s.inputs) for s in server.embedded()) <= 2


def test_the_one_text_the_service_refuses_is_skipped_alone(
        server: EmbeddingServer, embedder: FastEmbedEmbedder) -> None:
    server.refuse = "POISON"
    texts = [*TEXTS[:2], "a POISON text", *TEXTS[2:]]
    with pytest.raises(EmbeddingRejected) as rejected:
        service(server, embedder).embed_documents(texts)
    assert list(rejected.value.reasons) == [2]
    assert "HTTP 400: input rejected" in rejected.value.reasons[2]
    vectors = rejected.value.vectors
    assert vectors[2] is None and all(v is not None for i, v in enumerate(vectors) if i != 2)


def test_a_dead_endpoint_is_unreachable(embedder: FastEmbedEmbedder) -> None:
    with EmbeddingServer(embedder) as server:
        remote = service(server, embedder, retries=1)
    with pytest.raises(EmbeddingUnreachable, match="refused"):  # closed: nothing listens
        remote.embed_query("anything")
