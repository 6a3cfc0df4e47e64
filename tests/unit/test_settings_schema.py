"""Each config key is declared once (``settings_keys.SCHEMA``) and everything that states a
default, a bound or a gate is derived from it: ``Settings`` and the resolved-request values,
``docs/configuration.md``'s tables and example, ``kb-mcp init``'s template, ``--help``
(decision 0050)."""

from __future__ import annotations

import ast
import dataclasses
import inspect
import re
import tomllib
from dataclasses import fields
from pathlib import Path

import pytest
from click.testing import CliRunner

from kbmcp_adapters.embedding.service_embedder import MAX_WAITING_QUERIES
from kbmcp_adapters.mcp_server.http_limits import HttpLimits
from kbmcp_cli.init_cmd import config_text
from kbmcp_cli.main import cli
from kbmcp_core.errors import ConfigError
from kbmcp_core.search_request import SearchDefaults
from kbmcp_core.settings import Settings
from kbmcp_core.settings_docs import (
    KEYS_BEGIN,
    KEYS_END,
    TRUST_BEGIN,
    TRUST_END,
    key_table,
    shown_value,
    trust_table,
)
from kbmcp_core.settings_keys import SCHEMA, SEARCH_SLOTS_LOCAL, SEARCH_SLOTS_SERVICE
from kbmcp_core.shaping import ShapeOptions

ROOT = Path(__file__).resolve().parents[2]
CONFIGURATION = ROOT / "docs" / "configuration.md"
#: Settings attributes that are not config keys: what the process sets, not the user.
NOT_KEYS = {"embedding_model_follows_index", "read_only", "extra", "config_origin"}


def between(text: str, begin: str, end: str) -> str:
    return text.split(begin, 1)[1].split(end, 1)[0].strip("\n")


def help_text(*args: str) -> str:
    return CliRunner().invoke(cli, [*args, "--help"], terminal_width=2000).output


# -- one declaration per key ------------------------------------------------------------------
def test_every_settings_attribute_is_a_declared_key_and_takes_its_default_from_it() -> None:
    attributes = {f.name for f in fields(Settings)} - NOT_KEYS
    assert attributes == set(SCHEMA.by_field)
    resolved = Settings(kb_path=Path("kb"), index_dir=Path("kb/.kb-mcp"))
    for key in SCHEMA.keys:
        if key.field not in ("kb_path", "index_dir", "vectors_storage_options"):
            assert getattr(resolved, key.field) == key.default, key.dotted


@pytest.mark.parametrize("cls", [Settings, SearchDefaults, ShapeOptions, HttpLimits])
def test_no_class_writes_a_default_the_schema_declares(cls: type) -> None:
    """A field with a literal default is a second place a default is written: each of these
    takes it from the schema (``default("field")``), so there is nothing to keep in step.
    An empty tuple is no value, not a default."""
    tree = ast.parse(inspect.getsource(cls))
    literal = [node.target.id for node in ast.walk(tree)
               if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)
               and isinstance(node.value, ast.Constant | ast.Tuple | ast.BinOp)
               and not (isinstance(node.value, ast.Tuple) and not node.value.elts)
               and node.target.id not in NOT_KEYS]
    assert literal == []


def test_the_resolved_request_defaults_are_the_schema_defaults() -> None:
    defaults = SearchDefaults()
    assert (defaults.limit, defaults.max_limit, defaults.chunks_per_document) == (
        SCHEMA.default("search_default_limit"), SCHEMA.default("search_max_limit"),
        SCHEMA.default("search_chunks_per_document"))
    shape = ShapeOptions()
    assert (shape.diversity, shape.context, shape.context_chunks, shape.rerank,
            shape.rerank_candidates) == tuple(SCHEMA.default(f"search_{n}") for n in (
                "diversity", "context", "context_chunks", "rerank", "rerank_candidates"))


def test_a_bound_is_checked_with_the_key_named() -> None:
    workers = SCHEMA.by_field["parsers_workers"]
    with pytest.raises(ConfigError, match=r"^\[parsers\]\.workers must be from 1 to 32, got 0$"):
        workers.check(0)
    with pytest.raises(ConfigError, match=r"must be one of weighted, rrf, got 'max'"):
        SCHEMA.by_field["search_fusion"].check("max")
    with pytest.raises(ConfigError, match=r"must be int, not a boolean"):
        workers.check(True)
    workers.check(32)


# -- the docs, the template and --help, derived -----------------------------------------------
def test_the_key_and_trust_tables_of_configuration_md_are_the_generated_ones() -> None:
    page = CONFIGURATION.read_text(encoding="utf-8")
    assert between(page, KEYS_BEGIN, KEYS_END) == key_table(), (
        "docs/configuration.md's key table is not the schema's: run `make config-docs`")
    assert between(page, TRUST_BEGIN, TRUST_END) == trust_table(), (
        "docs/configuration.md's trust table is not the schema's: run `make config-docs`")
    for key in SCHEMA.keys:  # each key once in the key table, with its default
        rows = [r for r in key_table().splitlines() if r.startswith(f"| `{key.dotted}` |")]
        assert len(rows) == (0 if key.form in ("fields", "collections") else 1), key.dotted


def test_the_example_of_configuration_md_shows_the_defaults() -> None:
    """The commented example at the top of the page: every key set there has its default."""
    page = CONFIGURATION.read_text(encoding="utf-8")
    example = tomllib.loads(page.split("```toml\n", 1)[1].split("```", 1)[0])
    for section, table in example.items():
        if not isinstance(table, dict):
            continue
        for name, value in table.items():
            key = SCHEMA.key(section, name)
            assert key is not None, f"{section}.{name}"
            assert value == key.default or list(value) == list(key.default), key.dotted


def test_the_init_template_shows_each_schema_default() -> None:
    text, section, seen = config_text(), "", []
    for line in text.splitlines():
        if match := re.match(r"^\[(\w+)\]$", line):
            section = match[1]
        elif (match := re.match(r"^# (\w+) = (.*?)(?:\s+# .*)?$", line)) and section:
            key = SCHEMA.key(section, match[1])
            if key is None:  # [fields]: examples of names, not keys
                continue
            value = tomllib.loads(f"v = {match[2]}")["v"]
            assert value == (int(key.example) if key.example else key.default) or (
                list(value) == list(key.default)), key.dotted
            seen.append(key.dotted)
    assert sorted(seen) == sorted(k.dotted for k in SCHEMA.keys if k.hint) != []


def test_trust_help_lists_every_gated_key() -> None:
    text = " ".join(help_text("trust").split())
    for key in SCHEMA.gated():
        assert key.dotted.replace("[[collections]]", "collections") in text.replace(
            "[[collections]]", "collections"), key.dotted
    for name in ("collections", "embedding.base_url", "embedding.api_key_env",
                 "server.trusted_proxies", "parsers.max_output_chars", "parsers.isolate"):
        assert name in text


def test_the_cli_help_shows_the_schema_defaults() -> None:
    serve = " ".join(help_text("serve").split())
    for field, flag in (("server_body_timeout_s", "--body-timeout"),
                        ("server_max_sessions", "--max-sessions"),
                        ("server_max_connections_per_client", "--max-connections-per-client")):
        key = SCHEMA.by_field[field]
        assert f"(default {key.label}, {shown_value(key.default)})" in serve, flag
    search = " ".join(help_text("search").split())
    assert f"[search].default_limit, {SCHEMA.default('search_default_limit')}" in search
    assert f"[search].rerank_candidates ({SCHEMA.default('search_rerank_candidates')})" in search


def test_the_search_lane_is_four_in_process_twelve_with_a_service_and_the_key_wins() -> None:
    """Searches a server runs at once (decision 0057's addendum "four search slots"): with
    an embedding service, searches waiting for it hold their slots, so the lane must hold
    more than the service lets wait, or every other search would queue behind them."""
    local = Settings(kb_path=Path("/kb"), index_dir=Path("/kb/.kb-mcp"))
    service = dataclasses.replace(local, embedding_provider="openai-compatible")
    assert local.search_lane == SEARCH_SLOTS_LOCAL == 4
    assert service.search_lane == SEARCH_SLOTS_SERVICE > MAX_WAITING_QUERIES
    assert dataclasses.replace(service, server_search_slots=2).search_lane == 2
