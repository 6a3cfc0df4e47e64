"""Usage errors of every command: exit 2, one clear line on stderr, nothing on stdout."""

from __future__ import annotations

from pathlib import Path

import pytest

from kbmcp_cli.main import cli
from tests.cli.conftest import Invoke

COMMANDS = ("index", "status", "search", "doctor", "eval", "serve", "watch", "migrate-store",
            "token", "graph", "tune", "init", "get", "collections", "config")


def _args(command: str) -> list[str]:
    """The command with its required argument, if it has one."""
    if command == "migrate-store":  # a target in the (empty, temporary) working folder
        return [command, "--to", "sqlite:///team.db"]
    if command == "token":
        return [command, "list"]
    if command == "graph":
        return [command, "--path", "notes/a.md"]
    if command == "get":
        return [command, "a.md"]
    return [command, "keys"] if command == "search" else [command]


def assert_usage_error(result: object, *expected: str) -> None:
    from click.testing import Result

    assert isinstance(result, Result)
    assert result.exit_code == 2, (result.exit_code, result.stdout, result.stderr)
    assert result.stdout == ""
    assert "Traceback" not in result.stderr
    for text in expected:
        assert text in result.stderr, result.stderr


def test_the_group_registers_every_command_on_import() -> None:
    # `trust` and `docs` open no knowledge base (tests/cli/test_config_trust.py and
    # test_docs_cmd.py cover them); `service` is a group (tests/cli/test_service_cmd.py)
    assert sorted(cli.commands) == sorted((*COMMANDS, "trust", "docs", "service"))


@pytest.mark.parametrize("command", COMMANDS)
def test_an_unknown_option_is_a_usage_error(command: str, kb_mcp: Invoke) -> None:
    assert_usage_error(kb_mcp(*_args(command), "--no-such-option"),
                       "No such option '--no-such-option'")


@pytest.mark.parametrize("command", COMMANDS)
def test_a_missing_kb_folder_is_reported_with_exit_2(command: str, kb_mcp: Invoke,
                                                     tmp_path: Path) -> None:
    missing = tmp_path / "no-such-folder"
    assert_usage_error(kb_mcp(*_args(command), "--kb-path", str(missing)),
                       "kb_path is not a directory")


@pytest.mark.parametrize("command", COMMANDS)
def test_a_file_given_as_the_kb_folder_is_a_usage_error(command: str, kb_mcp: Invoke,
                                                        kb: Path) -> None:
    assert_usage_error(kb_mcp(*_args(command), "--kb-path", str(kb / "a.md")),
                       "Invalid value for '--kb-path'", "is a file")


@pytest.mark.parametrize("command", COMMANDS)
def test_an_unknown_config_key_is_reported_with_exit_2(command: str, kb_mcp: Invoke,
                                                       kb: Path, tmp_path: Path) -> None:
    config = tmp_path / "kb-mcp.toml"
    config.write_text("[search]\ndefault_limt = 3\n", encoding="utf-8")
    result = kb_mcp(*_args(command), "--kb-path", str(kb), "--config", str(config))
    assert_usage_error(result, "unknown key 'search.default_limt'")
    assert len(result.stderr.splitlines()) == 1


@pytest.mark.parametrize("command", COMMANDS)
def test_a_missing_config_file_is_reported_with_exit_2(command: str, kb_mcp: Invoke,
                                                       kb: Path, tmp_path: Path) -> None:
    result = kb_mcp(*_args(command), "--kb-path", str(kb), "--config",
                    str(tmp_path / "nope.toml"))
    assert_usage_error(result, "config file not found")


@pytest.mark.parametrize("command", ["status", "search", "doctor"])
def test_no_index_yet_is_exit_2_with_the_remedy(command: str, kb_mcp: Invoke,
                                               kb: Path) -> None:
    result = kb_mcp(*_args(command), "--kb-path", str(kb))
    assert_usage_error(result, "no index at", "run `kb-mcp index` first")
    assert len(result.stderr.splitlines()) == 1
    assert not (kb / ".kb-mcp").exists()  # reading never creates an index


@pytest.mark.parametrize(
    ("args", "option"),
    [
        (["index", "--format", "xml"], "--format"),
        (["status", "--format", "xml"], "--format"),
        (["doctor", "--format", "yaml"], "--format"),
        (["eval", "--format", "csv"], "--format"),
        (["eval", "--mode", "fuzzy"], "--mode"),
        (["eval", "--limit", "0"], "--limit"),
        (["search", "keys", "--format", "xml"], "--format"),
        (["search", "keys", "--mode", "fuzzy"], "--mode"),
        (["search", "keys", "--limit", "0"], "--limit"),
        (["search", "keys", "-n", "many"], "--limit"),
        (["search", "keys", "--chunks-per-document", "0"], "--chunks-per-document"),
        (["get", "a.md", "--lines", "9-3"], "--lines"),
        (["get", "a.md", "--lines", "x"], "--lines"),
        (["get", "a.md", "--page", "0"], "--page"),
        (["serve", "--transport", "carrier-pigeon"], "--transport"),
        (["serve", "--port", "70000"], "--port"),
        (["serve", "--max-sessions", "0"], "--max-sessions"),
        (["serve", "--body-timeout", "0"], "--body-timeout"),
        (["serve", "--session-idle-timeout", "-5"], "--session-idle-timeout"),
    ],
)
def test_a_bad_option_value_is_a_usage_error(args: list[str], option: str, kb_mcp: Invoke,
                                             kb: Path) -> None:
    assert_usage_error(kb_mcp(*args, "--kb-path", str(kb)), f"Invalid value for '{option}'")
    assert not (kb / ".kb-mcp").exists()


def test_search_without_a_query_is_a_usage_error(kb_mcp: Invoke, kb: Path) -> None:
    assert_usage_error(kb_mcp("search", "--kb-path", str(kb)), "Missing argument 'QUERY'")


def test_eval_without_a_golden_file_is_exit_2(kb_mcp: Invoke, kb: Path) -> None:
    result = kb_mcp("eval", "--kb-path", str(kb))
    assert_usage_error(result, "golden file not found", ".kb-mcp-eval.yml")


def test_eval_with_a_malformed_golden_file_is_exit_2(kb_mcp: Invoke, kb: Path,
                                                    tmp_path: Path) -> None:
    golden = tmp_path / "golden.yml"
    golden.write_text("queries:\n  - query: keys\n", encoding="utf-8")
    result = kb_mcp("eval", "--kb-path", str(kb), "--golden", str(golden))
    assert_usage_error(result, "needs an 'expected' list", "[] for a question")


def test_serve_refuses_a_non_loopback_host_without_allow_remote(kb_mcp: Invoke,
                                                                kb: Path) -> None:
    result = kb_mcp("serve", "--transport", "http", "--host", "0.0.0.0", "--port", "0",
                    "--no-watch", "--kb-path", str(kb))
    assert_usage_error(result, "refusing to listen on 0.0.0.0", "--allow-remote")


def test_every_command_has_help_on_every_option() -> None:
    import click

    undocumented = [
        f"{name} {p.opts[0]}" for name, cmd in cli.commands.items() for p in cmd.params
        if isinstance(p, click.Option) and not p.help
    ]
    assert undocumented == []
