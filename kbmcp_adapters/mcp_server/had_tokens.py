"""Knowledge bases that have had tokens, so that no file in a folder can turn token auth off.

``$XDG_CONFIG_HOME/kb-mcp/had-tokens.json`` maps a knowledge base's real path to the time
kb-mcp first saw tokens for it (``kb-mcp token create``, or an HTTP server that started
requiring them). It lives beside the trust list, outside every knowledge base, so neither
a ``kb-mcp.toml`` that appears in the folder nor a moved index or tokens file can remove
it; an HTTP server for a recorded knowledge base with no token does not start unless told
``--no-auth`` (decision 0047). Only the user can write it (``user_files``).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from kbmcp_adapters.app.trust import user_config_dir
from kbmcp_adapters.app.user_files import changing, read_private, write_private
from kbmcp_core.errors import ConfigError

if TYPE_CHECKING:
    from kbmcp_adapters.mcp_server.auth import HashedTokenVerifier

log = logging.getLogger(__name__)

RECORD_NAME = "had-tokens.json"
_WHAT = "the record of knowledge bases that have had tokens"
_REMEDY = "remove it (servers then start as if no knowledge base had had tokens)"
_FORMAT = 1


def record_file(env: Mapping[str, str] | None = None) -> Path:
    return user_config_dir(env) / RECORD_NAME


def _read(env: Mapping[str, str] | None) -> dict[str, str]:
    path = record_file(env)
    data = read_private(path, _WHAT, _REMEDY)
    if data is None:
        return {}
    found = data.get("knowledge_bases") if isinstance(data, dict) else None
    if not isinstance(found, dict) or data.get("format") != _FORMAT or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in found.items()):
        raise ConfigError(f"{_WHAT} {path} is damaged (not a kb-mcp record): {_REMEDY}")
    return dict(found)


def had_tokens_since(kb_path: Path, env: Mapping[str, str] | None = None) -> str | None:
    """When tokens were first seen for the knowledge base at ``kb_path``, or None."""
    return _read(env).get(str(kb_path.resolve()))


def remember(kb_path: Path, env: Mapping[str, str] | None = None,
             now: datetime | None = None) -> None:
    """Record that the knowledge base at ``kb_path`` has had tokens (once; kept)."""
    name = str(kb_path.resolve())
    path = record_file(env)
    if name in _read(env):
        return
    with changing(path, _WHAT):
        found = _read(env)
        if name in found:
            return
        found[name] = (now or datetime.now(UTC)).strftime("%Y-%m-%dT%H:%M:%SZ")
        write_private(path, _WHAT, {"format": _FORMAT, "knowledge_bases": dict(sorted(
            found.items()))})


def tokens_stay_on(kb_path: Path, verifier: HashedTokenVerifier, no_auth: bool) -> None:
    """At an HTTP server's start: remember a knowledge base served with tokens; refuse
    (``ConfigError``) to serve one that has had tokens without any, unless ``no_auth``
    (``--no-auth``), loopback or not."""
    if verifier.required():
        try:
            remember(kb_path)
        except ConfigError as exc:  # the tokens are required all the same
            log.warning("%s; this server requires tokens all the same", exc)
        return
    since = had_tokens_since(kb_path)
    if since is None:
        return
    if no_auth:
        log.warning("this knowledge base has had tokens (since %s) and has none now: "
                    "serving it WITHOUT AUTHENTICATION, as --no-auth asks", since)
        return
    raise ConfigError(
        f"refusing to serve {kb_path} without a token: it has had tokens since {since} "
        f"(recorded in {record_file()}), but the tokens file {verifier.tokens_file} holds "
        "none and KB_MCP_TOKEN_HASHES gives none; name its tokens file with --tokens-file "
        "or [server].tokens_file in your user config, create a token with `kb-mcp token "
        "create`, or pass --no-auth to serve it open")


__all__ = ["RECORD_NAME", "had_tokens_since", "record_file", "remember", "tokens_stay_on"]
