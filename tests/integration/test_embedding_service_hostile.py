"""The embedding-service adapter against a hostile service on loopback (issue 37): a
redirect elsewhere, an answer trickled a byte at a time, padded, stretched or nested deep,
and more searches than may wait for it. Each ends in one clear error or a keyword answer,
within the request's one deadline, with the key sent nowhere but the configured origin."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest

from kbmcp_adapters.embedding.service_config import ServiceConfig
from kbmcp_adapters.embedding.service_embedder import MAX_WAITING_QUERIES, ServiceEmbedder
from kbmcp_core.errors import EmbeddingUnavailable, EmbeddingUnreachable
from tests.embedding_server import EmbeddingServer
from tests.hashing_embedder import HashingEmbedder

KEY = "sk-test-0c5e1d7a9b3f4e82"
KEY_ENV = "KBMCP_TEST_HOSTILE_KEY"
DIMENSION = 32
TEXTS = ["The pager rotation changes on Monday.", "Signing keys rotate every 90 days.",
         "Rollbacks redeploy the previous tag.", "Kittens like to play with yarn."]
#: the longest a test waits for a condition it expects at once
PATIENCE_S = 30.0


@pytest.fixture
def hashing() -> HashingEmbedder:
    return HashingEmbedder(dimension=DIMENSION)


@pytest.fixture
def server(hashing: HashingEmbedder) -> Iterator[EmbeddingServer]:
    with EmbeddingServer(hashing, key=KEY) as s:
        yield s


@pytest.fixture(autouse=True)
def key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, KEY)


def service(server: EmbeddingServer, hashing: HashingEmbedder, *, timeout_s: float = 10.0,
            retries: int = 0) -> ServiceEmbedder:
    return ServiceEmbedder(ServiceConfig(
        base_url=server.base_url, document_model="m", query_model="m", dimension=DIMENSION,
        timeout_s=timeout_s, retries=retries, batch_size=8, api_key_env=KEY_ENV), hashing)


def wait_for(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + PATIENCE_S
    while not condition():
        assert time.monotonic() < deadline, f"never happened: {what}"
        time.sleep(0.01)


@pytest.mark.parametrize("status", [301, 302, 303, 307, 308])
def test_a_redirect_to_another_port_is_refused_and_the_key_goes_nowhere(
        server: EmbeddingServer, hashing: HashingEmbedder, status: int) -> None:
    with EmbeddingServer(hashing, key=KEY) as elsewhere:
        server.redirect = (status, elsewhere.base_url + "/embeddings?from=kb-mcp")
        remote = service(server, hashing, retries=2)
        with pytest.raises(EmbeddingUnavailable) as documents:
            remote.embed_documents(TEXTS)
        with pytest.raises(EmbeddingUnavailable) as query:
            remote.embed_query("pager rotation")
        assert elsewhere.heard == []  # nothing, and so no key, reached the other port
    for refused in (documents.value, query.value):
        message = str(refused)
        assert not isinstance(refused, EmbeddingUnreachable)  # no retry, no keyword fallback
        assert f"answered HTTP {status}, a redirect to http://127.0.0.1:" in message
        assert elsewhere.base_url.removesuffix("/v1") in message  # the host and port named
        assert "from=kb-mcp" not in message and KEY not in message and "\n" not in message
    assert len(server.heard) == 2  # one try each: a redirect is not something to retry


def test_a_redirect_to_another_scheme_is_refused_naming_it(
        server: EmbeddingServer, hashing: HashingEmbedder) -> None:
    server.redirect = (302, "ftp://files.example:2121/pub/vectors.json")
    with pytest.raises(EmbeddingUnavailable,
                       match=r"HTTP 302, a redirect to ftp://files\.example:2121; redirects "
                             r"are not followed"):
        service(server, hashing).embed_documents(TEXTS)


def test_a_trickled_answer_ends_at_the_requests_one_deadline(
        server: EmbeddingServer, hashing: HashingEmbedder) -> None:
    server.trickle_s = 0.05  # a byte every 50 ms: each read is quick, the answer takes a minute
    remote = service(server, hashing, timeout_s=1.0, retries=1)
    with pytest.raises(EmbeddingUnreachable, match=r"no answer within 1 s after 2 tries"):
        remote.embed_documents(TEXTS)
    with pytest.raises(EmbeddingUnreachable, match=r"no answer within 1 s"):
        remote.embed_query("pager rotation")  # a search then answers from keywords
    assert len(server.seen) == 3
    assert 0 < server.sent_bytes < 300  # the answers were far from whole when it gave up


@pytest.mark.parametrize("chunked", [False, True], ids=["with-length", "chunked"])
def test_an_answer_padded_past_its_cap_is_refused_before_it_is_read(
        server: EmbeddingServer, hashing: HashingEmbedder, chunked: bool) -> None:
    server.pad_bytes = 256 * 1024 * 1024  # valid JSON: whitespace, then the answer
    server.chunked = chunked
    with pytest.raises(EmbeddingUnavailable) as refused:
        service(server, hashing).embed_documents(TEXTS)
    message = str(refused.value)
    assert "sent more than 88,064 bytes for 4 vectors of 32 numbers" in message
    assert "check the model and [embedding].dimension" in message
    assert not isinstance(refused.value, EmbeddingUnreachable) and "\n" not in message
    assert server.sent_bytes < 32 * 1024 * 1024  # the client stopped reading


def test_vectors_far_longer_than_the_dimension_are_refused_by_the_cap(
        server: EmbeddingServer, hashing: HashingEmbedder) -> None:
    server.stretch_to = 100_000
    with pytest.raises(EmbeddingUnavailable, match="sent more than 88,064 bytes"):
        service(server, hashing).embed_documents(TEXTS)


def test_an_answer_nested_thousands_deep_is_one_line_not_a_recursion_error(
        server: EmbeddingServer, hashing: HashingEmbedder) -> None:
    server.nest_depth = 20_000
    remote = service(server, hashing)
    for call in (lambda: remote.embed_documents(TEXTS), lambda: remote.embed_query("pager")):
        with pytest.raises(EmbeddingUnavailable) as refused:
            call()
        assert "gave an answer nested deeper than 32 levels" in str(refused.value)


@pytest.mark.parametrize("cut", [30, -40], ids=["in-the-headers", "in-the-body"])
def test_an_answer_cut_short_is_a_service_that_went_away_and_is_tried_again(
        server: EmbeddingServer, hashing: HashingEmbedder, cut: int) -> None:
    server.truncate_to = cut
    with pytest.raises(EmbeddingUnreachable,
                       match="the connection closed in the middle of the answer after 2 tries"):
        service(server, hashing, retries=1).embed_documents(TEXTS)
    with pytest.raises(EmbeddingUnreachable):  # a search answers from keywords
        service(server, hashing).embed_query("pager")


def test_searches_past_the_waiting_limit_do_not_wait_for_the_service(
        server: EmbeddingServer, hashing: HashingEmbedder) -> None:
    server.trickle_s = 0.05
    remote = service(server, hashing, timeout_s=60.0)  # a query waits 10 s at most
    waiting = MAX_WAITING_QUERIES
    with ThreadPoolExecutor(waiting) as pool:
        held = [pool.submit(remote.embed_query, f"query {i}") for i in range(waiting)]
        wait_for(lambda: server.open_now == waiting, f"{waiting} queries at the service")
        with pytest.raises(EmbeddingUnreachable) as turned_away:
            remote.embed_query("one more")
        assert str(turned_away.value.detail) == f"{waiting} searches are already waiting for it"
        server.release()  # the service gives up: the waiting ones end too
        for future in held:
            with pytest.raises(EmbeddingUnreachable):
                future.result(timeout=PATIENCE_S)
    assert len(server.heard) == waiting  # the one turned away sent nothing
