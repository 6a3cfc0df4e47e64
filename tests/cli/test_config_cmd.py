"""``kb-mcp config`` says each key's value in effect and which layer gave it; the HTTP limits
are ``[server]`` keys a config file sets, a flag overrides and a found file may only
tighten (decision 0050)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from kbmcp_adapters.app.config import build_settings
from kbmcp_adapters.mcp_server.http_limits import HttpLimits
from kbmcp_core.settings_keys import SCHEMA
from tests.cli.conftest import Invoke
from tests.cli.test_config_layers import user_config
from tests.cli.test_config_trust import kb_with, one_error


def shown(kb_mcp: Invoke, *args: str) -> dict[str, tuple[object, str]]:
    result = kb_mcp("config", *args, "--format", "json")
    assert result.exit_code == 0, result.output
    return {row["key"]: (row["value"], row["from"])
            for row in json.loads(result.stdout)["keys"]}


def test_config_names_the_layer_each_value_came_from(
        kb_mcp: Invoke, tmp_path: Path, user_config_home: Path) -> None:
    mine = user_config(user_config_home,
                       'database_url = "postgresql+psycopg://kb:hunter2@db/kb"\n'
                       "[search]\ndefault_limit = 3\nmax_limit = 30\n")
    kb = kb_with(tmp_path / "kb", "[search]\ndefault_limit = 7\n[server]\nmax_sessions = 10\n")
    found = kb / "kb-mcp.toml"
    keys = shown(kb_mcp, "--kb-path", str(kb))
    assert set(keys) == {k.dotted for k in SCHEMA.keys}  # every key, once
    assert keys["search.default_limit"] == (7, f"found config {found}")  # over the user's
    assert keys["search.max_limit"] == (30, f"user config {mine}")  # not un-set by it
    assert keys["search.chunks_per_document"] == (4, "default")
    assert keys["server.max_sessions"] == (10, f"found config {found}")
    assert keys["kb_path"] == (str(kb), "flag")
    assert keys["database_url"][0] == "postgresql+psycopg://kb:***@db/kb"  # never the password

    text = kb_mcp("config", "--kb-path", str(kb)).stdout
    assert text.startswith(f"config: {found} (found in the knowledge base; not trusted")
    assert re.search(rf"^search\.default_limit +7  \(found config {re.escape(str(found))}\)$",
                     text, re.M)
    assert "hunter2" not in text


def test_the_http_limits_are_server_keys_and_a_flag_wins(tmp_path: Path) -> None:
    kb = kb_with(tmp_path / "kb")
    named = tmp_path / "serve.toml"
    named.write_text("[server]\nmax_sessions = 7\nmax_body_bytes = 65536\n"
                     "header_timeout_s = 2.5\n", encoding="utf-8")
    settings = build_settings(named, kb_path=kb)
    limits = HttpLimits.from_settings(settings)
    assert (limits.max_sessions, limits.max_body_bytes, limits.header_timeout_s) == (7, 65536, 2.5)
    assert limits.max_connections == SCHEMA.default("server_max_connections")
    assert HttpLimits.from_settings(settings, max_sessions=3, max_connections=None
                                    ).max_sessions == 3


def test_a_found_config_may_tighten_a_server_limit_but_not_loosen_it(
        kb_mcp: Invoke, tmp_path: Path) -> None:
    tighter = kb_with(tmp_path / "tighter", "[server]\nmax_sessions = 10\n")
    assert "kb-mcp trust" not in kb_mcp("config", "--kb-path", str(tighter)).output
    looser = kb_with(tmp_path / "looser", "[server]\nmax_connections = 100000\n")
    refused = kb_mcp("config", "--kb-path", str(looser))
    assert refused.exit_code == 2
    assert " sets server.max_connections " in one_error(refused.stderr)


def test_a_limit_out_of_bounds_is_refused_with_the_file_named(kb_mcp: Invoke,
                                                              tmp_path: Path) -> None:
    kb = kb_with(tmp_path / "kb", "[server]\nmax_sessions = 0\n")
    refused = kb_mcp("config", "--kb-path", str(kb))
    assert refused.exit_code == 2
    assert one_error(refused.stderr) == (
        f"kb-mcp: error: [server].max_sessions must be at least 1, got 0 (in {kb / 'kb-mcp.toml'})")
