"""Which config file a command uses, and what a file nobody named may say (decision 0021):
``--config`` > ``$KB_MCP_CONFIG`` > the knowledge base's ``kb-mcp.toml`` (layered over the
user's config: decision 0047) > the user's config; a file found by looking says where data
goes only once ``kb-mcp trust`` trusted its bytes."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import click
import pytest

from kbmcp_adapters.app.bootstrap import store_location
from kbmcp_adapters.app.config import build_settings
from kbmcp_adapters.mcp_server.runtime import KbRuntime
from kbmcp_cli.main import cli
from kbmcp_core.errors import IndexReadOnly
from tests.cli.conftest import Invoke
from tests.conftest import write_files

TEAM = {"handbook.md": "# Handbook\n\nThe team handbook covers on-call rotas.\n",
        "deploys.md": "# Deploys\n\nRedeploy the previous tag to roll back.\n"}
NOTES = {"garden.md": "# Garden\n\nTomatoes need staking in June.\n"}


def kb_with(root: Path, config: str | None = None) -> Path:
    write_files(root, NOTES)
    if config is not None:
        (root / "kb-mcp.toml").write_text(config, encoding="utf-8")
    return root


def one_error(result_stderr: str) -> str:
    lines = [line for line in result_stderr.splitlines() if line.strip()]
    assert len(lines) == 1, lines
    assert lines[0].startswith("kb-mcp: error: "), lines
    return lines[0]


def test_a_team_config_in_the_working_folder_leaves_another_kb_alone(
        kb_mcp: Invoke, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    team = tmp_path / "team"
    write_files(team, TEAM)
    team_config = team / "kb-mcp.toml"
    team_config.write_text(f'kb_path = "."\ndatabase_url = "sqlite:///{tmp_path / "team.db"}"\n',
                           encoding="utf-8")
    assert kb_mcp("index", "--config", str(team_config), "-q").exit_code == 0
    notes = kb_with(tmp_path / "notes")
    assert kb_mcp("index", "--kb-path", str(notes), "-q").exit_code == 0
    monkeypatch.chdir(team)

    status = kb_mcp("status", "--kb-path", str(notes))
    assert status.exit_code == 0, status.output
    assert "documents: 1\n" in status.stdout  # the notes' index, not the team's 2 documents
    assert "config: no config file\n" in status.stdout
    assert f"store: {notes / '.kb-mcp' / 'index.db'}\n" in status.stdout
    data = json.loads(kb_mcp("status", "--kb-path", str(notes), "--format", "json").stdout)
    assert data["documents"] == 1 and data["store"] == str(notes / ".kb-mcp" / "index.db")
    assert data["config"] == {"file": None, "found_by": None, "trusted": True, "over": None,
                              "summary": "no config file"}

    copied = kb_mcp("migrate-store", "--kb-path", str(notes), "--to",
                    f"sqlite:///{tmp_path / 'copy.db'}", "--vectors-to", str(tmp_path / "cv"))
    assert copied.exit_code == 0, copied.output
    assert "copied 1 documents" in copied.stdout


GATED = [
    ('database_url = "sqlite:///{elsewhere}/other.db"\n', "database_url"),
    ('vectors_uri = "{elsewhere}/vectors"\n', "vectors_uri"),
    ('[vectors.storage_options]\nregion = "eu-west-1"\n', "vectors.storage_options"),
    ('index_dir = "{elsewhere}/index"\n', "index_dir"),
    ('index_dir = "../outside"\n', "index_dir"),
    ('[server]\ntokens_file = "{elsewhere}/tokens.json"\n', "server.tokens_file"),
    ('[server]\ntrusted_proxies = ["0.0.0.0/0"]\n', "server.trusted_proxies"),
    ('[embedding]\ncache_dir = "{elsewhere}/models"\n', "embedding.cache_dir"),
    ('[embedding]\nmodel = "BAAI/bge-small-en-v1.5"\n', "embedding.model"),
    ('[embedding]\nprovider = "openai-compatible"\nbase_url = "http://embeddings.example.test/v1"\n'
     'model = "m"\ndimension = 8\n', "embedding.base_url"),
    ('[embedding]\napi_key_env = "AWS_SECRET_ACCESS_KEY"\n', "embedding.api_key_env"),
    ('[parsers]\nisolate = false\n', "parsers.isolate"),
    ('[parsers]\nmax_output_chars = 20000000\n', "parsers.max_output_chars"),
    ('[parsers]\ntimeout_seconds = 600\n', "parsers.timeout_seconds"),
    # a found config may not name folders to serve: it could name ~/.ssh (decision 0041)
    ('[[collections]]\nname = "keys"\npath = "{elsewhere}"\n', "collections"),
    # a found config may not say whose access tokens are accepted (decision 0054)
    ('[oauth]\nissuers = ["https://id.evil.example.test"]\n', "oauth.issuers"),
    ('[oauth]\nrebuild_scope = "openid"\n', "oauth.rebuild_scope"),
]


@pytest.mark.parametrize(("line", "key"), GATED, ids=[f"{k}-{i}" for i, (_, k) in
                                                      enumerate(GATED)])
def test_each_data_location_in_a_found_config_is_refused_until_trusted(
        kb_mcp: Invoke, tmp_path: Path, line: str, key: str) -> None:
    kb = kb_with(tmp_path / "kb", line.format(elsewhere=tmp_path / "elsewhere"))
    config = kb / "kb-mcp.toml"
    refused = kb_mcp("status", "--kb-path", str(kb))
    assert refused.exit_code == 2
    error = one_error(refused.stderr)
    assert f" sets {key} " in error and f"`kb-mcp trust {config}`" in error
    assert error.count(". ") == 0  # one sentence
    assert not (tmp_path / "elsewhere").exists()  # nothing was created where it points

    trusted = kb_mcp("trust", str(config))
    assert trusted.exit_code == 0, trusted.output
    assert key in trusted.stdout  # says what it now lets the file do
    after = kb_mcp("status", "--kb-path", str(kb))
    assert "not trusted" not in after.output and "kb-mcp trust" not in after.output


@pytest.mark.parametrize("line", [
    '[parsers]\nenabled = ["md", "txt"]\n',
    'index_dir = "sub/index"\n',
    '[embedding]\nmodel = "kb-mcp/bge-small-en-v1.5-int8"\n',
    '[search]\ndefault_limit = 2\n',
    '[parsers]\nmax_elements = 1000\nmemory_limit_mb = 256\nisolate = true\n',
])
def test_a_found_config_that_keeps_data_in_place_needs_no_trust(
        kb_mcp: Invoke, tmp_path: Path, line: str) -> None:
    kb = kb_with(tmp_path / "kb", line)
    status = kb_mcp("status", "--kb-path", str(kb))
    assert "kb-mcp trust" not in status.output
    assert "no index" in status.stderr  # it got as far as opening the index


def test_trust_edit_list_and_revoke(kb_mcp: Invoke, tmp_path: Path,
                                    user_config_home: Path) -> None:
    kb = kb_with(tmp_path / "kb", f'database_url = "sqlite:///{tmp_path / "db.sqlite"}"\n')
    config = kb / "kb-mcp.toml"
    assert kb_mcp("trust", "--list").stdout == "no config file is trusted\n"
    assert kb_mcp("trust", str(kb)).exit_code == 0  # a folder means its kb-mcp.toml
    trust_list = user_config_home / "kb-mcp" / "trusted.json"
    assert stat.S_IMODE(trust_list.stat().st_mode) == 0o600
    assert list(json.loads(trust_list.read_text())["trusted"]) == [str(config)]
    listed = kb_mcp("trust", "--list")
    assert listed.stdout.startswith(f"{config}\tsha256 ") and "unchanged" in listed.stdout
    assert "is not trusted" not in kb_mcp("status", "--kb-path", str(kb)).output

    with config.open("a", encoding="utf-8") as handle:
        handle.write("# an edit\n")
    changed = kb_mcp("status", "--kb-path", str(kb))
    assert changed.exit_code == 2
    assert "has changed since you trusted it" in one_error(changed.stderr)
    assert "changed" in kb_mcp("trust", "--list").stdout
    assert kb_mcp("trust", str(config)).exit_code == 0
    assert "kb-mcp trust" not in kb_mcp("status", "--kb-path", str(kb)).output

    revoked = kb_mcp("trust", "--revoke", str(config))
    assert revoked.exit_code == 0 and str(config) in revoked.stdout
    assert "is not trusted" in kb_mcp("status", "--kb-path", str(kb)).stderr
    assert kb_mcp("trust", "--list").stdout == "no config file is trusted\n"
    again = kb_mcp("trust", "--revoke", str(config))
    assert again.exit_code == 1 and "is not trusted" in again.stderr

    kb_mcp("trust", str(config))
    trust_list.chmod(0o666)  # another user could have added their own file
    unsafe = kb_mcp("status", "--kb-path", str(kb))
    assert unsafe.exit_code == 2 and "not yours alone to write" in one_error(unsafe.stderr)
    plain = kb_with(tmp_path / "plain", '[parsers]\nenabled = ["md"]\n')
    assert "no index at" in kb_mcp("status", "--kb-path", str(plain)).stderr  # needs no trust


def test_a_working_folder_config_is_the_config_only_without_kb_path(
        kb_mcp: Invoke, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    kb = kb_with(tmp_path / "kb")
    work = tmp_path / "work"
    work.mkdir()
    (work / "kb-mcp.toml").write_text(
        f'kb_path = "{kb}"\ndatabase_url = "sqlite:///{tmp_path / "db.sqlite"}"\n')
    monkeypatch.chdir(work)
    refused = kb_mcp("status")
    assert refused.exit_code == 2
    error = one_error(refused.stderr)
    assert "found in the working folder" in error and "database_url" in error
    assert kb_mcp("trust").exit_code == 0  # ./kb-mcp.toml by default
    status = kb_mcp("status", "-v")
    assert (f"config: {work / 'kb-mcp.toml'} (found in the working folder; trusted with "
            "`kb-mcp trust`)") in status.stderr
    assert "no index at " in status.stderr and "db.sqlite" in status.stderr


def test_kb_mcp_config_and_config_win_in_that_order(
        kb_mcp: Invoke, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    kb = kb_with(tmp_path / "kb", 'database_url = "sqlite:////nowhere/kb.db"\n')
    assert kb_mcp("index", "--kb-path", str(kb), "--config", str(tmp_path / "none.toml")
                  ).exit_code == 2  # a named file must exist
    by_env = tmp_path / "env.toml"
    by_env.write_text(f'kb_path = "{kb}"\n[parsers]\nenabled = ["md"]\n')
    named = tmp_path / "named.toml"
    named.write_text(f'kb_path = "{kb}"\ndatabase_url = "sqlite:///{tmp_path / "n.db"}"\n')
    monkeypatch.setenv("KB_MCP_CONFIG", str(by_env))
    assert kb_mcp("index", "--kb-path", str(kb), "-q").exit_code == 0  # the kb's file unread
    status = kb_mcp("status", "--kb-path", str(kb))
    assert f"config: {by_env} (named by KB_MCP_CONFIG; trusted)\n" in status.stdout
    assert f"store: {kb / '.kb-mcp' / 'index.db'}\n" in status.stdout
    other = kb_mcp("status", "--config", str(named))
    assert other.exit_code == 2 and "n.db" in other.stderr  # named: no trust needed
    assert "kb-mcp trust" not in other.stderr


def test_the_user_config_applies_to_a_kb_without_a_file_of_its_own(
        kb_mcp: Invoke, tmp_path: Path, user_config_home: Path) -> None:
    mine = user_config_home / "kb-mcp" / "config.toml"
    mine.parent.mkdir()
    mine.write_text(f'database_url = "sqlite:///{tmp_path / "mine.db"}"\n')
    bare = kb_with(tmp_path / "bare")
    status = kb_mcp("status", "--kb-path", str(bare), "-v")
    assert f"config: {mine} (your user config; trusted)" in status.stderr
    assert "mine.db" in status.stderr  # its database_url applies: no index there yet
    # a knowledge base's own file layers over it: tests/cli/test_config_layers.py


#: Arguments that let each command get as far as reading its configuration.
ARGS = {"index": [], "status": [], "search": ["tomatoes"], "doctor": [],
        "eval": ["--golden", "missing.yml"], "migrate-store": ["--to", "sqlite:////x/y.db"],
        "token": ["list"], "graph": ["--query", "tomatoes"], "tune": ["--golden", "missing.yml"],
        "init": [], "get": ["notes.md"], "collections": [], "service": ["status"], "config": []}


def test_every_command_has_v_and_it_names_the_config(kb_mcp: Invoke, tmp_path: Path) -> None:
    kb = kb_with(tmp_path / "kb", '[parsers]\nenabled = ["md"]\n')
    config = kb / "kb-mcp.toml"
    ctx = click.Context(cli)
    for name in sorted(set(cli.list_commands(ctx)) - {"trust", "docs", "serve", "watch"}):
        result = kb_mcp(name, *ARGS[name], "--kb-path", str(kb), "-v")
        assert (f"kb-mcp: INFO: config: {config} (found in the knowledge base; not trusted"
                in result.stderr), (name, result.output)
    for name in ("serve", "watch"):  # they would run on: a folder that is not there stops them
        result = kb_mcp(name, "--kb-path", str(tmp_path / "missing"), "-v")
        assert result.exit_code == 2
        assert "kb-mcp: INFO: config: no config file\n" in result.stderr, result.output


def test_doctor_names_the_config_and_the_store(kb_mcp: Invoke, tmp_path: Path) -> None:
    kb = kb_with(tmp_path / "kb", '[parsers]\nenabled = ["md"]\n')
    assert kb_mcp("index", "--kb-path", str(kb), "-q").exit_code == 0
    doctor = kb_mcp("doctor", "--kb-path", str(kb))
    assert (f"config: {kb / 'kb-mcp.toml'} (found in the knowledge base; not trusted"
            in doctor.stdout)
    assert f"store: {kb / '.kb-mcp' / 'index.db'}\n" in doctor.stdout
    report = json.loads(kb_mcp("doctor", "--kb-path", str(kb), "--format", "json").stdout)
    assert report["store"] == str(kb / ".kb-mcp" / "index.db")
    assert report["config"].startswith(str(kb / "kb-mcp.toml"))


def test_the_store_is_shown_without_its_password(tmp_path: Path) -> None:
    config = tmp_path / "team.toml"
    config.write_text(f'kb_path = "{tmp_path}"\n'
                      'database_url = "postgresql+psycopg://kb:hunter2secret@db.example:5432/kb"\n')
    shown = store_location(build_settings(config))
    assert shown == "postgresql+psycopg://kb:***@db.example:5432/kb"


def test_a_read_only_replica_names_the_store_it_cannot_write(tmp_path: Path) -> None:
    elsewhere = tmp_path / "shared" / "team.db"
    settings = build_settings(None, kb_path=tmp_path, database_url=f"sqlite:///{elsewhere}")
    with pytest.raises(IndexReadOnly) as refused:
        KbRuntime(settings, read_only=True).open_index(create=True)
    assert str(elsewhere) in str(refused.value)


def test_the_config_env_var_is_unset_and_the_user_config_dir_is_the_tests_own(
        user_config_home: Path) -> None:
    assert "KB_MCP_CONFIG" not in os.environ
    assert os.environ["XDG_CONFIG_HOME"] == str(user_config_home)
    assert not any(user_config_home.iterdir())


def test_trust_usage_errors_and_a_file_that_is_not_a_config(kb_mcp: Invoke,
                                                            tmp_path: Path) -> None:
    for args in (["--no-such-option"], ["--list", "x.toml"], ["--list", "--revoke"]):
        result = kb_mcp("trust", *args)
        assert result.exit_code == 2 and result.stdout == "", result.output
        assert "Traceback" not in result.stderr
    broken = tmp_path / "kb-mcp.toml"
    broken.write_text('database_url = "sqlite:///x.db"\n[parsers]\nenabeld = ["md"]\n')
    refused = kb_mcp("trust", str(broken))
    assert refused.exit_code == 2 and "unknown key 'parsers.enabeld'" in one_error(refused.stderr)
    assert kb_mcp("trust", "--list").stdout == "no config file is trusted\n"
    missing = kb_mcp("trust", str(tmp_path / "none.toml"))
    assert missing.exit_code == 2 and "cannot read config" in one_error(missing.stderr)
