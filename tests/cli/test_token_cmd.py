"""``kb-mcp token``: a token is shown once on stdout; only its hash is kept, in a 0600 file."""

from __future__ import annotations

import json
import stat
from pathlib import Path

from click.testing import CliRunner

from kbmcp_cli.main import cli
from tests.cli.conftest import Invoke


def test_create_prints_the_token_once_and_stores_only_its_hash(kb_mcp: Invoke, kb: Path) -> None:
    made = kb_mcp("token", "create", "laptop", "--kb-path", str(kb))
    assert made.exit_code == 0, made.output
    token = made.stdout.strip()
    assert token.startswith("kbm_") and "\n" not in token
    assert "only time the token is shown" in made.stderr and token not in made.stderr
    stored = kb / ".kb-mcp" / "tokens.json"
    assert stat.S_IMODE(stored.stat().st_mode) == 0o600
    raw = stored.read_text(encoding="utf-8")
    assert token not in raw
    (entry,) = json.loads(raw)["tokens"]
    assert entry["name"] == "laptop" and entry["hash"].startswith("sha256:")

    hashed = CliRunner().invoke(cli, ["token", "hash"], input=token + "\n", prog_name="kb-mcp")
    assert hashed.exit_code == 0 and hashed.stdout.strip() == entry["hash"]

    listed = kb_mcp("token", "list", "--kb-path", str(kb))
    assert listed.exit_code == 0
    (line,) = listed.stdout.splitlines()
    name, created, prefix = line.split("\t")
    assert (name, created) == ("laptop", entry["created"])
    assert entry["hash"].startswith(prefix.rstrip("…")) and entry["hash"] not in line


def test_names_default_and_revoke_removes_one(kb_mcp: Invoke, tmp_path: Path) -> None:
    path = tmp_path / "shared" / "tokens.json"
    path.parent.mkdir()
    for _ in range(2):
        assert kb_mcp("token", "create", "--tokens-file", str(path)).exit_code == 0
    names = [t["name"] for t in json.loads(path.read_text(encoding="utf-8"))["tokens"]]
    assert names == ["token-1", "token-2"]
    gone = kb_mcp("token", "revoke", "token-1", "--tokens-file", str(path))
    assert gone.exit_code == 0 and "revoked" in gone.stderr
    names = [t["name"] for t in json.loads(path.read_text(encoding="utf-8"))["tokens"]]
    assert names == ["token-2"]
    again = kb_mcp("token", "revoke", "token-1", "--tokens-file", str(path))
    assert again.exit_code == 2
    assert "no token named 'token-1'" in again.stderr and "token-2" in again.stderr


def test_a_duplicate_name_is_refused_and_changes_nothing(kb_mcp: Invoke, kb: Path) -> None:
    assert kb_mcp("token", "create", "ci", "--kb-path", str(kb)).exit_code == 0
    stored = kb / ".kb-mcp" / "tokens.json"
    before = stored.read_bytes()
    twice = kb_mcp("token", "create", "ci", "--kb-path", str(kb))
    assert twice.exit_code == 2 and twice.stdout == ""
    assert "exists already" in twice.stderr
    assert stored.read_bytes() == before


def test_revoking_the_last_token_says_what_that_means(kb_mcp: Invoke, tmp_path: Path) -> None:
    path = tmp_path / "tokens.json"
    for name in ("a", "b"):
        assert kb_mcp("token", "create", name, "--tokens-file", str(path)).exit_code == 0
    first = kb_mcp("token", "revoke", "a", "--tokens-file", str(path))
    assert first.exit_code == 0 and "last token" not in first.stderr
    last = kb_mcp("token", "revoke", "b", "--tokens-file", str(path))
    assert last.exit_code == 0
    assert "warning: that was the last token" in last.stderr
    assert "keeps refusing every request" in last.stderr
    assert "unless `kb-mcp serve --no-auth` says so" in last.stderr  # decision 0047


def test_the_config_can_name_the_tokens_file(kb_mcp: Invoke, kb: Path, tmp_path: Path) -> None:
    config = tmp_path / "team" / "kb-mcp.toml"
    config.parent.mkdir()
    config.write_text(f'kb_path = "{kb}"\n[server]\ntokens_file = "shared.json"\n',
                      encoding="utf-8")
    assert kb_mcp("token", "create", "ci", "--config", str(config)).exit_code == 0
    assert [t["name"] for t in json.loads((config.parent / "shared.json").read_text(
        encoding="utf-8"))["tokens"]] == ["ci"]
    listed = kb_mcp("token", "list", "--config", str(config))
    assert listed.stdout.startswith("ci\t")
    assert not (kb / ".kb-mcp" / "tokens.json").exists()


def test_creating_a_token_records_that_the_kb_has_had_tokens(
        kb_mcp: Invoke, kb: Path, user_config_home: Path) -> None:
    assert kb_mcp("token", "create", "ci", "--kb-path", str(kb)).exit_code == 0
    record = user_config_home / "kb-mcp" / "had-tokens.json"
    assert stat.S_IMODE(record.stat().st_mode) == 0o600
    assert list(json.loads(record.read_text(encoding="utf-8"))["knowledge_bases"]) == [str(kb)]
