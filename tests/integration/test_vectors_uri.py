"""Vectors at a URI: LanceDB in S3 (moto's server on loopback) and in a folder outside the
index folder; credentials never shown; an object store that stops answering."""

from __future__ import annotations

import json
import logging
import re
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from kbmcp_adapters.app.config import build_settings
from kbmcp_adapters.app.knowledge_base import KnowledgeBase
from kbmcp_core.errors import ConfigError, StoreError
from tests.conftest import OpenKb, write_files
from tests.s3_server import FAKE_KEY_ID, FAKE_SECRET, S3Server
from tests.store_faults import PAGES, kb_mcp, no_traceback


def objects(server: S3Server, bucket: str, prefix: str) -> list[str]:
    """The keys the S3 server holds under ``prefix`` (one ListObjectsV2 page)."""
    url = f"{server.endpoint}/{bucket}?list-type=2&prefix={prefix}"
    with urllib.request.urlopen(url, timeout=10) as answer:
        return re.findall(r"<Key>([^<]+)</Key>", answer.read().decode())


def vector_paths(kb: KnowledgeBase, query: str) -> list[str]:
    response = kb.search(query, mode="vector", limit=3)
    assert response.notice is None, response.notice
    return [hit.path for hit in response.results]


@pytest.fixture
def bucket(s3_server: S3Server) -> str:
    return s3_server.new_bucket()


@pytest.fixture
def private_s3() -> Iterator[S3Server]:
    """A server of this test's own, which the test may stop."""
    server = S3Server.start()
    try:
        yield server
    finally:
        server.stop()


def s3_settings(server: S3Server, bucket: str) -> dict[str, object]:
    return {"vectors_uri": f"s3://{bucket}/team/vectors",
            "vectors_storage_options": server.storage_options()}


def test_vectors_in_s3_are_shared_updated_and_deleted_with_their_documents(
    tmp_path: Path, open_kb: OpenKb, s3_server: S3Server, bucket: str
) -> None:
    kb_path = tmp_path / "kb"
    write_files(kb_path, dict(PAGES))
    writer = open_kb(kb_path, **s3_settings(s3_server, bucket))
    assert writer.index().added == len(PAGES)
    assert objects(s3_server, bucket, "team/vectors/"), "no vector object in the bucket"
    assert not (kb_path / ".kb-mcp" / "vectors").exists()
    first = vector_paths(writer, "when do tomatoes need staking")
    assert first[0] == "garden.md"

    reader = open_kb(kb_path, **s3_settings(s3_server, bucket))  # a second process's view
    assert vector_paths(reader, "when do tomatoes need staking") == first

    unchanged = writer.index()
    assert (unchanged.unchanged, unchanged.chunks_embedded) == (len(PAGES), 0)

    (kb_path / "garden.md").unlink()
    write_files(kb_path, {"bees.md": "# Bees\n\nThe hives swarm in May; keep a spare box "
                                     "ready for the swarm.\n"})
    run = writer.index()
    assert (run.added, run.deleted) == (1, 1)
    assert "garden.md" not in vector_paths(reader, "when do tomatoes need staking")
    assert vector_paths(reader, "beehive swarming in spring")[0] == "bees.md"
    report = reader.doctor()
    assert report.healthy, [f.as_dict() for f in report.findings]


def test_a_vector_table_dropped_from_the_bucket_is_noticed_and_rebuilt(
    tmp_path: Path, open_kb: OpenKb, s3_server: S3Server, bucket: str
) -> None:
    import lancedb

    kb_path = tmp_path / "kb"
    write_files(kb_path, dict(PAGES))
    kb = open_kb(kb_path, **s3_settings(s3_server, bucket))
    kb.index()
    lancedb.connect(f"s3://{bucket}/team/vectors",
                    storage_options=s3_server.storage_options()).drop_table("chunks")

    again = open_kb(kb_path, **s3_settings(s3_server, bucket))
    run = again.index()
    assert run.unchanged == len(PAGES) and run.chunks_embedded > 0
    assert vector_paths(again, "rotating the signing keys")[0] == "keys.md"
    assert again.doctor().healthy


def test_credentials_from_the_environment_reach_s3(
    tmp_path: Path, open_kb: OpenKb, s3_server: S3Server, bucket: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name, value in s3_server.environment().items():
        monkeypatch.setenv(name, value)
    kb_path = tmp_path / "kb"
    write_files(kb_path, dict(PAGES))
    kb = open_kb(kb_path, vectors_uri=f"s3://{bucket}/env")
    kb.index()
    assert objects(s3_server, bucket, "env/")
    assert vector_paths(kb, "nightly database dump")[0] == "notes/backup.md"


def test_vectors_in_a_shared_folder_outside_the_index_folder(
    tmp_path: Path, open_kb: OpenKb
) -> None:
    kb_path, shared = tmp_path / "kb", tmp_path / "shared" / "vectors"
    write_files(kb_path, dict(PAGES))
    kb = open_kb(kb_path, vectors_uri=str(shared))
    kb.index()
    assert list(shared.glob("chunks.lance/_versions/*"))
    assert not (kb_path / ".kb-mcp" / "vectors").exists()
    assert vector_paths(kb, "aphids and ladybirds")[0] == "garden.md"

    import shutil

    shutil.rmtree(shared)  # deleted behind kb-mcp's back: the next run notices
    again = open_kb(kb_path, vectors_uri=str(shared))
    assert again.index().chunks_embedded > 0
    assert vector_paths(again, "aphids and ladybirds")[0] == "garden.md"


def test_a_relative_vectors_path_in_the_config_file_is_relative_to_it(tmp_path: Path) -> None:
    kb_path = tmp_path / "kb"
    kb_path.mkdir()
    (kb_path / "kb-mcp.toml").write_text('vectors_uri = "../shared/vectors"\n')
    settings = build_settings(kb_path / "kb-mcp.toml", kb_path=kb_path)  # named: trusted
    assert settings.vectors_location == str(kb_path / ".." / "shared" / "vectors")
    assert not settings.vectors_remote


@pytest.mark.parametrize(("uri", "says"), [
    ("db://my-project", "LanceDB Cloud"),
    ("memory://", "keeps nothing"),
    (f"s3://{FAKE_KEY_ID}:{FAKE_SECRET}@bucket/prefix", "must not carry credentials"),
    ("s3:///prefix", "names no bucket"),
])
def test_unusable_vector_uris_are_config_errors(tmp_path: Path, uri: str, says: str) -> None:
    with pytest.raises(ConfigError, match=says) as caught:
        build_settings(None, cwd=tmp_path, kb_path=tmp_path, vectors_uri=uri)
    assert FAKE_SECRET not in str(caught.value)


def test_a_storage_option_of_the_wrong_type_names_the_key_not_the_value(tmp_path: Path) -> None:
    (tmp_path / "kb-mcp.toml").write_text(
        f'[vectors.storage_options]\naws_secret_access_key = ["{FAKE_SECRET}"]\n')
    with pytest.raises(ConfigError, match="aws_secret_access_key") as caught:
        build_settings(None, cwd=tmp_path, kb_path=tmp_path)
    assert FAKE_SECRET not in str(caught.value)


def test_settings_never_show_the_secret(tmp_path: Path, s3_server: S3Server) -> None:
    (tmp_path / "kb-mcp.toml").write_text(
        'vectors_uri = "s3://bucket/prefix"\n[vectors.storage_options]\n'
        + "".join(f'{k} = "{v}"\n' for k, v in s3_server.storage_options().items()))
    settings = build_settings(tmp_path / "kb-mcp.toml", kb_path=tmp_path)
    assert settings.vectors_storage_options["aws_secret_access_key"] == FAKE_SECRET
    assert FAKE_SECRET not in repr(settings) and FAKE_SECRET not in str(settings)
    assert s3_server.endpoint in repr(settings)  # what is not a secret stays visible


def test_a_stopped_s3_server_leaves_keyword_search_and_a_doctor_finding(
    tmp_path: Path, open_kb: OpenKb, private_s3: S3Server, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    kb_path = tmp_path / "kb"
    write_files(kb_path, dict(PAGES))
    settings = s3_settings(private_s3, private_s3.new_bucket())
    open_kb(kb_path, **settings).index()
    private_s3.stop()

    kb = open_kb(kb_path, **settings)
    response = kb.search("staking tomatoes in June")
    assert [h.path for h in response.results][:1] == ["garden.md"]
    assert response.notice is not None
    assert "keyword search only" in response.notice and "does not answer" in response.notice
    assert "kb-mcp index" not in response.notice  # nothing to rebuild
    report = kb.doctor()
    assert [f.check for f in report.findings] == ["vectors-unreadable"]
    assert "does not answer" in report.findings[0].summary
    with pytest.raises(StoreError, match="does not answer") as caught:
        kb.index()
    for text in (response.notice, json.dumps(report.as_dict()), str(caught.value),
                 caplog.text):
        assert FAKE_SECRET not in text


def test_the_command_line_never_prints_the_secret_and_survives_a_stopped_server(
    tmp_path: Path, kb_env: dict[str, str], private_s3: S3Server
) -> None:
    kb_path = tmp_path / "kb"
    write_files(kb_path, dict(PAGES))
    # LanceDB's own retries are a storage option a user may set: none here, so that each
    # process meets the stopped server in ~2 s instead of ~5 (what is asserted is the same)
    storage = {**private_s3.storage_options(), "client_max_retries": "0"}
    options = "".join(f'{k} = "{v}"\n' for k, v in storage.items())
    bucket = private_s3.new_bucket()
    (kb_path / "kb-mcp.toml").write_text(
        f'kb_path = "."\nvectors_uri = "s3://{bucket}/cli"\n'
        f"[vectors.storage_options]\n{options}")
    config = ["--config", str(kb_path / "kb-mcp.toml")]
    env = {**kb_env, "RUST_LOG": "debug"}  # whatever LanceDB would log, too
    outputs = []
    for args in (["index", *config], ["status", *config], ["doctor", *config]):
        done = kb_mcp(args, env)
        assert done.returncode == 0, done.stderr
        outputs.append(done)
    assert f"vectors: s3://{bucket}/cli\n" in outputs[1].stdout  # status says where
    private_s3.stop()
    search = kb_mcp(["search", "staking tomatoes", *config], env)
    assert search.returncode == 0, search.stderr
    assert "garden.md" in search.stdout and "keyword search only" in search.stdout
    doctor = kb_mcp(["doctor", "--format", "json", *config], env)
    assert doctor.returncode == 1
    assert {f["check"] for f in json.loads(doctor.stdout)["findings"]} == {"vectors-unreadable"}
    index = kb_mcp(["index", *config], env)
    assert index.returncode != 0 and "does not answer" in index.stderr
    for done in (*outputs, search, doctor, index):
        no_traceback(done.stderr)
        assert FAKE_SECRET not in done.stdout + done.stderr


def test_a_store_found_not_answering_is_not_asked_again_during_the_hold(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The vector store's calls share one outage: once a call has met a closed port, the
    next one fails with the same reason without opening LanceDB again."""
    from kbmcp_adapters.vectors.lance_store import LanceVectorStore
    from kbmcp_core.errors import VectorsUnreachable

    store = LanceVectorStore("s3://kb-down/vectors", 4, storage_options={
        "aws_endpoint": "http://127.0.0.1:1", "aws_region": "us-east-1",
        "aws_access_key_id": FAKE_KEY_ID, "aws_secret_access_key": FAKE_SECRET,
        "allow_http": "true", "client_max_retries": "0"})
    with pytest.raises(VectorsUnreachable, match="does not answer") as first:
        store.count()

    def never(*_: object) -> None:
        raise AssertionError("LanceDB asked again during the hold")

    monkeypatch.setattr(store, "_connect", never)
    monkeypatch.setattr(store, "_open", never)
    with pytest.raises(VectorsUnreachable) as second:
        store.search([1.0, 0.0, 0.0, 0.0], 5)
    assert str(second.value).split(": ", 1)[1] == str(first.value).split(": ", 1)[1]
