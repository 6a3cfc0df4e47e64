"""A found ``kb-mcp.toml`` layers over the user's config and never un-sets what it does not
name; a found file that is a symbolic link is refused and trust binds a file's bytes, path
and owner; ``kb_path`` in a found file is gated as ``[[collections]]`` is (decision 0047)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from kbmcp_adapters.mcp_server.tokens import add_token
from tests.cli.conftest import Invoke
from tests.cli.test_config_trust import NOTES, TEAM, kb_with, one_error
from tests.conftest import write_files


def user_config(home: Path, text: str) -> Path:
    mine = home / "kb-mcp" / "config.toml"
    mine.parent.mkdir(exist_ok=True)
    mine.write_text(text, encoding="utf-8")
    return mine


def test_a_found_config_layers_over_the_user_config_and_keeps_its_tokens_file(
        kb_mcp: Invoke, tmp_path: Path, user_config_home: Path) -> None:
    tokens = tmp_path / "secrets" / "tokens.json"
    tokens.parent.mkdir()
    add_token(tokens, "laptop")
    mine = user_config(user_config_home, f'[server]\ntokens_file = "{tokens}"\n'
                                         '[search]\ndefault_limit = 3\n')
    notes = kb_with(tmp_path / "notes")
    assert kb_mcp("token", "list", "--kb-path", str(notes)).stdout.startswith("laptop\t")

    # what `kb-mcp init`, a `git pull` or a synced share can put there
    (notes / "kb-mcp.toml").write_text('[parsers]\nenabled = ["md"]\n', encoding="utf-8")
    listed = kb_mcp("token", "list", "--kb-path", str(notes))
    assert listed.exit_code == 0, listed.output
    assert listed.stdout.startswith("laptop\t")  # the user's tokens file still applies
    status = kb_mcp("status", "--kb-path", str(notes), "-v")
    # -v says what `status` says: this file sets nothing that needs trust
    assert (f"config: {notes / 'kb-mcp.toml'} (found in the knowledge base; not trusted, and "
            "needs no trust: it sets nothing that says where data goes; over your user config "
            f"{mine})") in status.stderr


def test_a_found_config_changes_only_the_keys_it_names(
        kb_mcp: Invoke, tmp_path: Path, user_config_home: Path) -> None:
    mine = user_config(user_config_home, f'database_url = "sqlite:///{tmp_path / "mine.db"}"\n')
    own = kb_with(tmp_path / "own", '[parsers]\nenabled = ["md"]\n')
    assert kb_mcp("index", "--kb-path", str(own), "-q").exit_code == 0
    status = kb_mcp("status", "--kb-path", str(own))
    assert status.exit_code == 0, status.output
    assert f"store: sqlite:///{tmp_path / 'mine.db'}\n" in status.stdout  # the user's, kept
    shown = json.loads(kb_mcp("status", "--kb-path", str(own), "--format", "json").stdout)
    assert shown["config"]["over"] == str(mine)

    # a found file may not move a user's setting that says where data goes, untrusted
    (own / "kb-mcp.toml").write_text(f'database_url = "sqlite:///{tmp_path / "its.db"}"\n',
                                     encoding="utf-8")
    refused = kb_mcp("status", "--kb-path", str(own))
    assert refused.exit_code == 2 and " sets database_url " in one_error(refused.stderr)
    assert not (tmp_path / "its.db").exists()


def test_a_symlinked_found_config_never_borrows_the_trust_of_its_target(
        kb_mcp: Invoke, tmp_path: Path) -> None:
    team = tmp_path / "team"
    write_files(team, TEAM)
    team_index = tmp_path / "team-index"
    (team / "kb-mcp.toml").write_text(f'index_dir = "{team_index}"\n', encoding="utf-8")
    assert kb_mcp("trust", str(team)).exit_code == 0
    assert kb_mcp("index", "--kb-path", str(team), "-q").exit_code == 0
    attacker = kb_with(tmp_path / "attacker")
    (attacker / "kb-mcp.toml").symlink_to(team / "kb-mcp.toml")

    attack = kb_mcp("index", "--kb-path", str(attacker))
    assert attack.exit_code == 2
    error = one_error(attack.stderr)
    assert "is a symbolic link" in error and "--config" in error
    team_status = kb_mcp("status", "--kb-path", str(team), "--format", "json")
    assert json.loads(team_status.stdout)["documents"] == len(TEAM)  # the team's, untouched
    assert not (attacker / ".kb-mcp").exists()
    refused = kb_mcp("trust", str(attacker / "kb-mcp.toml"))  # trusting the link: no
    assert refused.exit_code == 2 and "symbolic link" in one_error(refused.stderr)


def test_trust_binds_the_path_and_the_owner_as_well_as_the_bytes(
        kb_mcp: Invoke, tmp_path: Path, user_config_home: Path) -> None:
    line = f'database_url = "sqlite:///{tmp_path / "db.sqlite"}"\n'
    kb = kb_with(tmp_path / "kb", line)
    assert kb_mcp("trust", str(kb)).exit_code == 0
    assert "not trusted" not in kb_mcp("status", "--kb-path", str(kb)).output
    copy = kb_with(tmp_path / "copy", line)  # the same bytes under another path
    moved = kb_mcp("status", "--kb-path", str(copy))
    assert moved.exit_code == 2 and "is not trusted" in one_error(moved.stderr)

    trust_list = user_config_home / "kb-mcp" / "trusted.json"
    data = json.loads(trust_list.read_text())
    entry = data["trusted"][str(kb / "kb-mcp.toml")]
    assert entry["owner"] == os.stat(kb / "kb-mcp.toml").st_uid
    entry["owner"] += 1  # the file trusted was another user's: it is not this one
    trust_list.write_text(json.dumps(data))
    other = kb_mcp("status", "--kb-path", str(kb))
    assert other.exit_code == 2
    assert f"belongs to uid {entry['owner'] - 1}, not to uid {entry['owner']}" \
        in one_error(other.stderr)


def test_a_trust_list_of_an_older_kb_mcp_asks_for_trust_again(
        kb_mcp: Invoke, tmp_path: Path, user_config_home: Path) -> None:
    kb = kb_with(tmp_path / "kb", f'database_url = "sqlite:///{tmp_path / "db.sqlite"}"\n')
    assert kb_mcp("trust", str(kb)).exit_code == 0
    trust_list = user_config_home / "kb-mcp" / "trusted.json"
    entry = json.loads(trust_list.read_text())["trusted"][str(kb / "kb-mcp.toml")]
    trust_list.write_text(json.dumps({"format": 1, "trusted": {
        str(kb / "kb-mcp.toml"): entry["sha256"]}}))
    old = kb_mcp("status", "--kb-path", str(kb))
    assert old.exit_code == 2 and "did not record its owner" in one_error(old.stderr)
    assert kb_mcp("trust", str(kb)).exit_code == 0
    assert "not trusted" not in kb_mcp("status", "--kb-path", str(kb)).output


def test_kb_path_in_a_found_config_is_gated_like_collections(
        kb_mcp: Invoke, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    private = tmp_path / "private"
    write_files(private, {"diary.md": "# Diary\n\nDear diary.\n"})
    cloned = tmp_path / "cloned"
    cloned.mkdir()
    (cloned / "kb-mcp.toml").write_text(f'kb_path = "{private}"\n', encoding="utf-8")
    monkeypatch.chdir(cloned)
    for command in ("status", "index"):
        refused = kb_mcp(command)
        assert refused.exit_code == 2, refused.output
        error = one_error(refused.stderr)
        assert " sets kb_path " in error and f"`kb-mcp trust {cloned / 'kb-mcp.toml'}`" in error
    assert not (private / ".kb-mcp").exists()  # nothing read or written there
    assert kb_mcp("trust").exit_code == 0
    assert "no index at" in kb_mcp("status").stderr  # trusted: it may name that folder


def test_kb_path_inside_the_found_configs_own_folder_needs_no_trust(
        kb_mcp: Invoke, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = tmp_path / "repo"
    write_files(repo / "docs", NOTES)
    (repo / "kb-mcp.toml").write_text('kb_path = "docs"\n', encoding="utf-8")
    (repo / "elsewhere").symlink_to(tmp_path)  # a link inside leading out is outside
    monkeypatch.chdir(repo)
    status = kb_mcp("status")
    assert "kb-mcp trust" not in status.output and "no index at" in status.stderr
    (repo / "kb-mcp.toml").write_text('kb_path = "elsewhere"\n', encoding="utf-8")
    assert " sets kb_path " in one_error(kb_mcp("status").stderr)
