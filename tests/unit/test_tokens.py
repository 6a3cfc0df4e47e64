"""Bearer tokens: stored only as hashes in a 0600 file, checked against every hash."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import anyio
import pytest

from kbmcp_adapters.mcp_server.auth import HashedTokenVerifier
from kbmcp_adapters.mcp_server.tokens import (
    TOKEN_PREFIX,
    add_token,
    hashes_from_env,
    read_tokens,
    revoke_token,
    token_hash,
)
from kbmcp_core.errors import ConfigError


def verify(verifier: HashedTokenVerifier, token: str) -> str | None:
    """The owner the verifier names for ``token``, or None when it refuses it."""
    found = anyio.run(verifier.verify_token, token)
    return None if found is None else found.client_id


def test_a_new_token_is_stored_only_as_its_hash_in_a_private_file(tmp_path: Path) -> None:
    path = tmp_path / "tokens.json"
    before = os.umask(0)  # the most permissive umask: the file must still be private
    try:
        token, entry = add_token(path, "laptop")
    finally:
        os.umask(before)
    assert token.startswith(TOKEN_PREFIX) and len(token) >= len(TOKEN_PREFIX) + 43
    raw = path.read_text(encoding="utf-8")
    assert token not in raw and token[len(TOKEN_PREFIX):] not in raw
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    stored = json.loads(raw)["tokens"]
    assert stored == [{"name": "laptop", "created": entry.created, "hash": token_hash(token)}]
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []


def test_tokens_are_unique_and_names_are_too(tmp_path: Path) -> None:
    path = tmp_path / "tokens.json"
    first, _ = add_token(path, "a")
    second, _ = add_token(path, "b")
    assert first != second
    with pytest.raises(ConfigError, match="exists already"):
        add_token(path, "a")
    with pytest.raises(ConfigError, match="not allowed"):
        add_token(path, "../x")
    assert [t.name for t in read_tokens(path)] == ["a", "b"]


def test_a_symlinked_tokens_file_is_refused_not_followed(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere.json"
    add_token(target, "a")
    link = tmp_path / "tokens.json"
    link.symlink_to(target)
    with pytest.raises(ConfigError, match="symbolic link"):
        read_tokens(link)
    with pytest.raises(ConfigError, match="symbolic link"):
        HashedTokenVerifier(link)


def test_a_malformed_tokens_file_is_a_config_error(tmp_path: Path) -> None:
    path = tmp_path / "tokens.json"
    path.write_text('{"tokens": [{"name": "a", "hash": "plaintext"}]}', encoding="utf-8")
    with pytest.raises(ConfigError, match="not a kb-mcp tokens file"):
        HashedTokenVerifier(path)


def test_the_verifier_accepts_the_right_token_and_refuses_others(tmp_path: Path) -> None:
    path = tmp_path / "tokens.json"
    laptop, _ = add_token(path, "laptop")
    ci, _ = add_token(path, "ci")
    verifier = HashedTokenVerifier(path)
    assert verify(verifier, laptop) == "laptop"
    assert verify(verifier, ci) == "ci"
    assert verify(verifier, laptop[:-1]) is None
    assert verify(verifier, token_hash(laptop)) is None  # the hash is not a token
    assert verify(verifier, "") is None


def test_a_token_revoked_or_created_while_serving_counts_at_once(tmp_path: Path) -> None:
    path = tmp_path / "tokens.json"
    old, _ = add_token(path, "old")
    verifier = HashedTokenVerifier(path)
    assert verify(verifier, old) == "old"
    new, _ = add_token(path, "new")
    revoke_token(path, "old")
    assert verify(verifier, old) is None
    assert verify(verifier, new) == "new"
    with pytest.raises(ConfigError, match="no token named"):
        revoke_token(path, "old")


def test_a_file_broken_while_serving_fails_closed(tmp_path: Path) -> None:
    path = tmp_path / "tokens.json"
    token, _ = add_token(path, "a")
    verifier = HashedTokenVerifier(path)
    path.write_text("not json", encoding="utf-8")
    assert verify(verifier, token) is None


def test_hashes_from_the_environment_are_accepted(tmp_path: Path) -> None:
    token = "kbm_from-a-secret-store"
    hashes = hashes_from_env(f" {token_hash(token)} ,, {token_hash('other')[7:].upper()}")
    assert hashes == (token_hash(token), token_hash("other"))
    verifier = HashedTokenVerifier(tmp_path / "absent.json", hashes)
    assert verifier.has_tokens()
    assert verify(verifier, token) == "env-1"
    assert verify(verifier, "other") == "env-2"
    with pytest.raises(ConfigError, match="not a token hash"):
        hashes_from_env("sha256:1234")


def test_no_file_and_no_hashes_means_no_tokens(tmp_path: Path) -> None:
    verifier = HashedTokenVerifier(tmp_path / "absent.json")
    assert not verifier.has_tokens()
    assert verify(verifier, "kbm_anything") is None


@pytest.mark.parametrize(("mode", "reason"), [(0o666, "writable by other users"),
                                              (0o620, "writable by other users")])
def test_a_tokens_file_others_can_write_is_refused(tmp_path: Path, mode: int,
                                                   reason: str) -> None:
    path = tmp_path / "tokens.json"
    add_token(path, "a")
    path.chmod(mode)
    with pytest.raises(ConfigError, match=reason):
        read_tokens(path)
    with pytest.raises(ConfigError, match=reason):
        HashedTokenVerifier(path)


def test_a_hard_linked_or_foreign_tokens_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "tokens.json"
    add_token(path, "a")
    os.link(path, tmp_path / "second-name.json")
    with pytest.raises(ConfigError, match="hard link"):
        read_tokens(path)
    os.unlink(tmp_path / "second-name.json")
    if os.geteuid() == 0:  # only root can give a file away
        os.chown(path, 65534, 65534)
        with pytest.raises(ConfigError, match="owned by uid 65534"):
            read_tokens(path)


def test_once_tokens_were_required_a_broken_file_never_opens_the_server(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "tokens.json"
    token, _ = add_token(path, "a")
    verifier = HashedTokenVerifier(path)
    assert verifier.required()
    for damage in ("truncate", "folder", "missing", "repaired"):
        if damage == "truncate":
            path.write_text('{"format": 1, "tokens": [', encoding="utf-8")
        elif damage == "folder":
            path.unlink()
            path.mkdir()
        elif damage == "missing":
            path.rmdir()
        else:
            token, _ = add_token(path, "b")
        for _ in range(5):
            assert verifier.required()
            assert (verify(verifier, token) == "b") == (damage == "repaired")
    errors = [r for r in caplog.records if r.levelname == "ERROR"]
    assert len(errors) == 3  # one per problem, not one per request
    revoke_token(path, "b")  # the last one: still closed
    assert verifier.required() and not verifier.has_tokens()


def test_a_server_that_never_had_tokens_is_open_until_one_is_created(tmp_path: Path) -> None:
    path = tmp_path / "tokens.json"
    verifier = HashedTokenVerifier(path)
    assert not verifier.required()
    add_token(path, "first")
    assert verifier.required()
    revoke_token(path, "first")
    assert verifier.required()
