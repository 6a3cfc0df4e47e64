"""`[embedding] provider = "openai-compatible"` end to end through the command line, against
a real service on loopback (tests/embedding_server.py): index, search, the identity the
index keeps, the probe before `--force`, each fault, and the API key shown nowhere (0037)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import Result

from kbmcp_adapters.embedding.fastembed_embedder import FastEmbedEmbedder
from tests.cli.conftest import EVAL_DOCS, Invoke
from tests.embedding_server import EmbeddingServer

KEY = "sk-live-91b0c4e2aa7d4b8f"
KEY_ENV = "KBMCP_TEST_EMBEDDING_KEY"
IDENTITY = "openai-compatible:all-minilm;dimension=384"


@pytest.fixture
def server(embedder: FastEmbedEmbedder) -> Iterator[EmbeddingServer]:
    with EmbeddingServer(embedder, key=KEY) as s:
        yield s


@pytest.fixture
def kb(tmp_path: Path) -> Path:
    root = tmp_path / "kb"
    root.mkdir()
    for name, text in EVAL_DOCS.items():
        (root / name).write_text(text, encoding="utf-8")
    return root


def write_config(path: Path, server: EmbeddingServer, extra: str = "", *,
                 retries: int = 1, timeout_s: float = 10) -> Path:
    path.write_text(
        "[embedding]\n"
        'provider = "openai-compatible"\n'
        f'base_url = "{server.base_url}"\n'
        'model = "all-minilm"\n'
        "dimension = 384\n"
        f'api_key_env = "{KEY_ENV}"\n'
        f"retries = {retries}\n"
        f"timeout_s = {timeout_s}\n" + extra, encoding="utf-8")
    return path


@pytest.fixture
def run(kb_mcp: Invoke, kb: Path, server: EmbeddingServer, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Invoke, list[Result]]]:
    """``run(command, *args)`` with ``--kb-path`` and the service's config; every result
    is kept, so a test can look for the key in all that was shown."""
    monkeypatch.setenv(KEY_ENV, KEY)
    config = write_config(tmp_path / "service.toml", server)
    results: list[Result] = []

    def invoke(command: str, *args: str) -> Result:
        result = kb_mcp(command, "--kb-path", str(kb), "--config", str(config), *args)
        results.append(result)
        return result

    yield invoke, results
    for result in results:
        assert KEY not in result.output and KEY not in (result.stderr or "")


def vector_top(invoke: Invoke, query: str) -> list[str]:
    result = invoke("search", query, "--mode", "vector", "--format", "json")
    assert result.exit_code == 0, result.output
    return [hit["path"] for hit in json.loads(result.stdout)["results"]]


def test_an_index_built_through_the_service_searches_by_meaning(
        run: tuple[Invoke, list[Result]], server: EmbeddingServer, kb: Path) -> None:
    invoke, results = run
    indexed = invoke("index", "-v")
    assert indexed.exit_code == 0, indexed.output
    assert vector_top(invoke, "how do I undo a bad release")[0] == "deploys.md"
    status = json.loads(invoke("status", "--format", "json").stdout)
    assert status["model"] == IDENTITY and status["dimension"] == 384
    doctor = invoke("doctor")
    assert "documents: 3" in doctor.output
    assert "model-mismatch" not in doctor.output  # it compares the service's identity
    assert all(seen.authorized for seen in server.seen)
    stored = b"".join(p.read_bytes() for p in (kb / ".kb-mcp").rglob("*") if p.is_file())
    assert KEY.encode() not in stored  # never stored
    assert len(results) == 4  # the fixture then looks for the key in every output


def test_another_model_set_up_is_model_mismatch_with_the_remedy(
        run: tuple[Invoke, list[Result]], kb_mcp: Invoke, kb: Path, server: EmbeddingServer,
        tmp_path: Path) -> None:
    invoke, _ = run
    assert invoke("index").exit_code == 0
    prefixed = write_config(tmp_path / "prefixed.toml", server,
                            'document_prefix = "passage: "\n')
    refused = kb_mcp("index", "--kb-path", str(kb), "--config", str(prefixed))
    assert refused.exit_code == 2
    assert (f"built with embedding model {IDENTITY!r} but 'openai-compatible:all-minilm;"
            'document_prefix="passage: ";dimension=384\' is configured') in refused.stderr
    assert "kb-mcp index --force" in refused.stderr
    local = kb_mcp("index", "--kb-path", str(kb))  # the in-process default model
    assert local.exit_code == 2 and IDENTITY in local.stderr


def test_eval_and_migrate_store_know_the_service_as_the_model(
        run: tuple[Invoke, list[Result]], kb: Path, tmp_path: Path) -> None:
    invoke, _ = run
    assert invoke("index").exit_code == 0
    golden = tmp_path / "golden.yml"
    golden.write_text("queries:\n  - id: deploy\n    query: how do I undo a bad release\n"
                      "    expected: [{path: deploys.md}]\n", encoding="utf-8")
    evaluated = invoke("eval", "--golden", str(golden), "--save", "service")
    assert evaluated.exit_code == 0, evaluated.output
    saved = json.loads((kb / ".kb-mcp" / "evals" / "service.json").read_text("utf-8"))
    assert saved["model"] == IDENTITY
    copied = invoke("migrate-store", "--to", f"sqlite:///{tmp_path / 'copy.db'}",
                    "--vectors-to", str(tmp_path / "copy-vectors"))
    assert copied.exit_code == 0, copied.output  # not taken for another model's index


def test_force_asks_the_service_once_before_it_empties_anything(
        run: tuple[Invoke, list[Result]], server: EmbeddingServer) -> None:
    invoke, _ = run
    assert invoke("index").exit_code == 0
    server.cut_to = 256  # the service now serves another model
    rebuilt = invoke("index", "--force")
    assert rebuilt.exit_code == 1
    assert "vectors of 256 dimensions but [embedding].dimension is 384" in rebuilt.stderr
    server.cut_to = None
    assert vector_top(invoke, "how do I undo a bad release")[0] == "deploys.md"  # kept
    assert invoke("index", "--force").exit_code == 0


def test_a_chunk_the_service_refuses_is_skipped_with_a_warning(
        run: tuple[Invoke, list[Result]], server: EmbeddingServer, kb: Path) -> None:
    invoke, _ = run
    (kb / "poison.md").write_text("# Poison\n\nThis note mentions POISON in its text.\n",
                                  encoding="utf-8")
    server.refuse = "POISON"
    indexed = invoke("index", "--format", "json")
    assert indexed.exit_code == 0, indexed.output
    summary = json.loads(indexed.stdout)
    assert summary["added"] == 4 and summary["chunks_embedded"] == 3
    assert "poison.md: a chunk was left without a vector: the embedding service refused it " \
           "(HTTP 400: input rejected)" in indexed.stderr
    found = invoke("search", "POISON", "--mode", "lexical", "--format", "json")
    assert [h["path"] for h in json.loads(found.stdout)["results"]] == ["poison.md"]
    assert vector_top(invoke, "how do I undo a bad release")[0] == "deploys.md"


def test_an_overloaded_service_stops_the_run_and_the_next_run_continues(
        run: tuple[Invoke, list[Result]], server: EmbeddingServer) -> None:
    invoke, _ = run
    server.always = 503
    stopped = invoke("index")
    assert stopped.exit_code == 1
    assert "HTTP 503" in stopped.stderr and "after 2 tries" in stopped.stderr
    assert "the next `kb-mcp index` embeds the chunks still without vectors" in stopped.stderr
    keywords = invoke("search", "pager duty handover", "--format", "json")
    assert keywords.exit_code == 0, keywords.output  # phase one finished: keywords answer
    assert json.loads(keywords.stdout)["results"][0]["path"] == "oncall.md"
    server.always = None
    resumed = invoke("index", "--format", "json")
    assert resumed.exit_code == 0, resumed.output
    assert json.loads(resumed.stdout)["chunks_embedded"] == 3  # the three left without one
    assert vector_top(invoke, "how do I undo a bad release")[0] == "deploys.md"


def test_a_dead_service_at_search_time_answers_from_keywords_with_a_notice(
        run: tuple[Invoke, list[Result]], server: EmbeddingServer) -> None:
    invoke, _ = run
    assert invoke("index").exit_code == 0
    server.close()
    answered = invoke("search", "pager duty handover")
    assert answered.exit_code == 0, answered.output
    assert "oncall.md" in answered.stdout
    assert "semantic search is unavailable (embedding service:" in answered.output
    assert "results from keyword search only" in answered.output


@pytest.mark.parametrize(("lines", "message"), [
    ('provider = "openai-compatible"\nmodel = "m"\ndimension = 8\n',
     "needs [embedding].base_url"),
    ('provider = "openai-compatible"\nbase_url = "http://127.0.0.1:9/v1"\nmodel = "m"\n',
     "needs [embedding].dimension"),
    ('provider = "openai-compatible"\nbase_url = "http://u:p@127.0.0.1:9/v1"\nmodel = "m"\n'
     "dimension = 8\n", "must not carry credentials"),
    ('provider = "openai-compatible"\nbase_url = "ftp://127.0.0.1/v1"\nmodel = "m"\n'
     "dimension = 8\n", "must be an http:// or https:// URL"),
    ('provider = "openai-compatible"\nbase_url = "http://127.0.0.1:9/v1"\nmodel = "m"\n'
     'dimension = 8\napi_key_env = "sk-abc-123"\n', "NAME of an environment variable"),
    ('base_url = "http://127.0.0.1:9/v1"\n', 'set [embedding].provider = "openai-compatible"'),
    ('provider = "cloud"\n', "[embedding].provider must be one of"),
])
def test_a_bad_service_setting_is_one_clear_error(kb_mcp: Invoke, kb: Path, tmp_path: Path,
                                                  lines: str, message: str) -> None:
    config = tmp_path / "bad.toml"
    config.write_text("[embedding]\n" + lines, encoding="utf-8")
    result = kb_mcp("index", "--kb-path", str(kb), "--config", str(config))
    assert result.exit_code == 2
    assert message in result.stderr
    assert not (kb / ".kb-mcp").exists()  # refused before anything was created


def test_a_redirect_is_refused_naming_where_it_points_and_the_key_goes_nowhere(
        run: tuple[Invoke, list[Result]], server: EmbeddingServer,
        embedder: FastEmbedEmbedder) -> None:
    invoke, _ = run
    assert invoke("index").exit_code == 0
    with EmbeddingServer(embedder) as elsewhere:
        for status, location in ((302, elsewhere.base_url + "/embeddings"),
                                 (301, "ftp://127.0.0.1:2121/vectors")):
            server.redirect = (status, location)
            where = location.split("/v1")[0].removesuffix("/vectors")
            indexed = invoke("index", "--force")
            searched = invoke("search", "pager duty handover", "--mode", "vector")
            for result in (indexed, searched):
                assert result.exit_code == 1, result.output
                assert f"answered HTTP {status}, a redirect to {where}; redirects are not " \
                       "followed" in result.stderr
                assert "Traceback" not in result.output
        assert elsewhere.heard == []  # no request, so no key, ever reached it
    server.redirect = None
    assert vector_top(invoke, "how do I undo a bad release")[0] == "deploys.md"  # kept


def test_a_trickling_service_ends_the_run_and_the_search_within_the_deadline(
        kb_mcp: Invoke, kb: Path, server: EmbeddingServer, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, KEY)
    config = write_config(tmp_path / "trickle.toml", server, retries=0, timeout_s=1)
    server.trickle_s = 0.05  # every read is quick; an answer would take minutes

    def invoke(*args: str) -> Result:
        return kb_mcp(*args, "--kb-path", str(kb), "--config", str(config))

    stopped = invoke("index")
    assert stopped.exit_code == 1, stopped.output
    assert "no answer within 1 s" in stopped.stderr
    assert "the next `kb-mcp index` embeds the chunks still without vectors" in stopped.stderr
    searched = invoke("search", "pager duty handover", "--format", "json")
    assert searched.exit_code == 0, searched.output  # nothing lost: keywords answer
    answer = json.loads(searched.stdout)
    assert answer["results"][0]["path"] == "oncall.md"
    assert answer["notice"].startswith("semantic search is unavailable (embedding service: ")
    assert "no answer within 1 s" in answer["notice"]
    server.trickle_s = None
    resumed = invoke("index", "--format", "json")
    assert resumed.exit_code == 0, resumed.output
    assert json.loads(resumed.stdout)["chunks_embedded"] == 3
