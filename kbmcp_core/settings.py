"""Settings: one frozen value holding every knob, validated once at the edge."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import cast
from urllib.parse import quote, urlsplit, urlunsplit

from kbmcp_core.collections import CollectionSpec
from kbmcp_core.fields import Declared
from kbmcp_core.fusion import Fusion, FusionMethod, VectorScale
from kbmcp_core.settings_keys import DEFAULT_EXCLUDE_DIRS as DEFAULT_EXCLUDE_DIRS
from kbmcp_core.settings_keys import DEFAULT_RERANKER as DEFAULT_RERANKER
from kbmcp_core.settings_keys import INDEX_DIR_NAME as INDEX_DIR_NAME
from kbmcp_core.settings_keys import SEARCH_SLOTS_LOCAL, SEARCH_SLOTS_SERVICE, default

#: Directory names never walked, whatever the configuration says.
FAIL_SAFE_DIRS: tuple[str, ...] = (".git", ".svn", ".hg", "node_modules")

#: What an index folder holds (a SQLite index): the database, the vectors, the writer lock.
#: A folder holding the database and one of the other two is an index, whatever its name,
#: and is never walked (``kbmcp_adapters.filesystem.exclusion.holds_index``).
INDEX_DB_NAME = "index.db"
VECTORS_DIR_NAME = "vectors"
WRITER_LOCK_NAME = "writer.lock"
IGNORE_FILE_NAME = ".kb-mcpignore"
CONFIG_FILE_NAME = "kb-mcp.toml"


#: Storage options shown as they are by ``repr``; every other value may be a secret.
_PLAIN_OPTIONS = frozenset({
    "region", "aws_region", "endpoint", "aws_endpoint", "allow_http", "aws_allow_http",
    "allow_invalid_certificates", "connect_timeout", "timeout", "request_timeout",
    "client_max_retries", "client_retry_timeout", "download_retry_count",
    "virtual_hosted_style_request", "aws_virtual_hosted_style_request", "proxy_url",
    "user_agent", "account_name", "azure_storage_account_name",
})
_USERINFO = re.compile(r"(?<=://)[^/@\s]+@")


def without_userinfo(text: str) -> str:
    """``text`` with any ``user:password@`` removed from the URLs in it."""
    return _USERINFO.sub("***@", text)


class StorageOptions(Mapping[str, str]):
    """Object-store options for the vectors (``[vectors.storage_options]``). Read-only;
    ``repr`` shows only the names of values that may be secrets, never the values."""

    __slots__ = ("_items",)

    def __init__(self, items: Mapping[str, str] | None = None) -> None:
        self._items = dict(items or {})

    def __getitem__(self, key: str) -> str:
        return self._items[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def secrets(self) -> list[str]:
        """The values ``repr`` hides: what must never appear in a message or a log."""
        return [v for k, v in self._items.items() if k.lower() not in _PLAIN_OPTIONS and v]

    def __repr__(self) -> str:
        shown = {k: (without_userinfo(v) if k.lower() in _PLAIN_OPTIONS else "***")
                 for k, v in self._items.items()}
        return f"StorageOptions({shown!r})"

    __str__ = __repr__


def is_remote_uri(uri: str) -> bool:
    """True for an object-store URI (``s3://``, ``gs://``, ``az://`` …), false for a
    folder path or a ``file://`` URI."""
    scheme = urlsplit(uri).scheme.lower() if "://" in uri else ""
    return bool(scheme) and scheme != "file"


def public_uri(uri: str) -> str:
    """``uri`` as it may be shown: no user, password, query string or fragment."""
    if not is_remote_uri(uri):
        return uri
    parts = urlsplit(uri)
    host = parts.netloc.rpartition("@")[2]
    return urlunsplit((parts.scheme, host, parts.path, "", ""))


#: The first line of the file `kb-mcp init` writes; ``status`` and ``doctor`` name such a
#: file as init's (a wording only: what a file may set is decided by its keys and trust).
INIT_HEADER = "# kb-mcp.toml: the settings of this knowledge base, written by `kb-mcp init`."


@dataclass(frozen=True, slots=True)
class ConfigOrigin:
    """Which config file the settings were read from, how it was found, and whether it
    may say where data goes (decision 0021): named by the user (``--config``,
    ``KB_MCP_CONFIG``, their own user config) or trusted with ``kb-mcp trust``. A file
    found by looking is layered over the user's config, when there is one (0047)."""

    path: Path | None = None
    #: "named by --config", "named by KB_MCP_CONFIG", "your user config", "found in the
    #: knowledge base" or "found in the working folder" (empty when there is no file)
    found_by: str = ""
    trusted: bool = True
    #: the user's own config this file is layered over (decision 0047), if any
    over: Path | None = None
    #: an untrusted found file that sets nothing gated: it needs no trust (issue 41)
    needs_no_trust: bool = False
    #: ... and it starts with the header `kb-mcp init` writes (``INIT_HEADER``)
    by_init: bool = False

    @property
    def implicit(self) -> bool:
        """Found by looking (in the knowledge base or the working folder), not chosen."""
        return self.found_by.startswith("found in")

    def describe(self) -> str:
        """One line for ``status``, ``doctor`` and ``-v``."""
        if self.path is None:
            return "no config file"
        if not self.implicit:
            trust = "trusted"
        elif self.trusted:
            trust = "trusted with `kb-mcp trust`"
        elif self.by_init and self.needs_no_trust:
            trust = "written by kb-mcp init, formats only: needs no trust"
        elif self.needs_no_trust:
            trust = "not trusted, and needs no trust: it sets nothing that says where data goes"
        else:
            trust = "not trusted: it may not say where data goes"
        over = f"; over your user config {self.over}" if self.over is not None else ""
        return f"{self.path} ({self.found_by}; {trust}{over})"


@dataclass(frozen=True, slots=True)
class Settings:
    """Every knob, resolved: each key's default, bounds and doc are declared once in
    ``settings_keys.SCHEMA``, which the attributes below are filled from."""

    kb_path: Path
    index_dir: Path
    database_url: str | None = default("database_url")
    #: where the vectors live: None (``<index_dir>/vectors``), a folder, or an object-store
    #: URI such as ``s3://bucket/prefix`` (see ``vectors_location``)
    vectors_uri: str | None = default("vectors_uri")
    vectors_storage_options: StorageOptions = field(default_factory=StorageOptions)
    #: the model for a new index: the integer copy of MiniLM since decision 0046
    embedding_model: str = default("embedding_model")
    #: the config named no model: an index that records one keeps it
    #: (``kbmcp_adapters.app.index_model``, decision 0046); set by ``build_settings``
    embedding_model_follows_index: bool = False
    embedding_batch_size: int = default("embedding_batch_size")
    embedding_threads: int | None = default("embedding_threads")
    #: ``[embedding]`` provider: "local" (in process) or "openai-compatible", a service the
    #: user runs, with the keys below (decision 0037; checked by embedding/service_config)
    embedding_provider: str = default("embedding_provider")
    embedding_base_url: str | None = default("embedding_base_url")
    embedding_query_model: str | None = default("embedding_query_model")
    embedding_document_model: str | None = default("embedding_document_model")
    embedding_query_prefix: str = default("embedding_query_prefix")
    embedding_document_prefix: str = default("embedding_document_prefix")
    embedding_dimension: int | None = default("embedding_dimension")
    embedding_max_input_chars: int = default("embedding_max_input_chars")
    embedding_timeout_s: float = default("embedding_timeout_s")
    embedding_retries: int = default("embedding_retries")
    #: the NAME of the environment variable holding the service's API key (never the key)
    embedding_api_key_env: str | None = default("embedding_api_key_env")
    #: the service's model reads Chinese, Japanese and Korean (else its vector leg is
    #: weighed down for such queries, as the default model's is)
    embedding_multilingual: bool = default("embedding_multilingual")
    model_cache_dir: Path | None = default("model_cache_dir")
    enabled_formats: tuple[str, ...] = default("enabled_formats")
    #: ``[parsers]`` budgets of one converted file, and its worker pool (decision 0022)
    parsers_max_output_chars: int = default("parsers_max_output_chars")
    parsers_max_elements: int = default("parsers_max_elements")
    parsers_timeout_seconds: float = default("parsers_timeout_seconds")
    parsers_isolate: bool = default("parsers_isolate")
    parsers_workers: int = default("parsers_workers")
    parsers_memory_limit_mb: int = default("parsers_memory_limit_mb")
    exclude_dirs: tuple[str, ...] = default("exclude_dirs")
    chunk_max_tokens: int | None = default("chunk_max_tokens")
    chunk_min_tokens: int = default("chunk_min_tokens")
    search_default_limit: int = default("search_default_limit")
    search_max_limit: int = default("search_max_limit")
    search_chunks_per_document: int = default("search_chunks_per_document")
    #: MMR λ (1.0 = off), context kind and neighbours, reranking: decision 0016
    search_diversity: float = default("search_diversity")
    search_context: str = default("search_context")
    search_context_chunks: int = default("search_context_chunks")
    search_rerank: bool = default("search_rerank")
    #: the cross-encoder ``rerank`` runs (a packaged model's name): decision 0016
    search_reranker: str = default("search_reranker")
    search_rerank_candidates: int = default("search_rerank_candidates")
    #: best candidates re-scored by their nearest paragraph, 0 = off: decision 0028
    search_passage_candidates: int | None = default("search_passage_candidates")
    #: how the two legs are fused (``fusion`` property): decision 0015
    search_fusion: str = default("search_fusion")
    search_lexical_weight: float = default("search_lexical_weight")
    search_lexical_weight_min: float = default("search_lexical_weight_min")
    search_vector_scale: str = default("search_vector_scale")
    search_rrf_k: int = default("search_rrf_k")
    #: ``[fields]``: the front-matter keys indexed for filtering, (name, type) sorted by
    #: name (``fields.declare``; decision 0036)
    declared_fields: Declared = default("declared_fields")
    watch: bool = default("watch")
    watch_debounce_ms: int = default("watch_debounce_ms")
    writer_lock_timeout_s: float = default("writer_lock_timeout_s")
    #: open the index for reading only, whatever the file permissions (``serve
    #: --read-only``): nothing in the index folder is created or changed
    read_only: bool = False
    #: [server].tokens_file: the tokens file of `serve` and `kb-mcp token` (else in index_dir)
    server_tokens_file: Path | None = default("server_tokens_file")
    #: [server].index_on_start: `serve` (not read-only) builds a missing index and brings a
    #: stale one up to date in the background as it starts (decision 0024; --no-index: off)
    server_index_on_start: bool = default("server_index_on_start")
    #: [server].trusted_proxies: addresses or networks whose X-Forwarded-* headers `serve`
    #: believes (none by default; --trusted-proxy adds to them)
    server_trusted_proxies: tuple[str, ...] = default("server_trusted_proxies")
    #: [server] HTTP limits of `serve --transport http` (``HttpLimits``; decision 0050)
    server_body_timeout_s: float = default("server_body_timeout_s")
    server_max_body_bytes: int = default("server_max_body_bytes")
    server_session_idle_s: float = default("server_session_idle_s")
    server_max_sessions: int = default("server_max_sessions")
    server_max_sessions_per_token: int = default("server_max_sessions_per_token")
    server_max_sessions_per_client: int = default("server_max_sessions_per_client")
    server_header_timeout_s: float = default("server_header_timeout_s")
    server_max_connections: int = default("server_max_connections")
    server_max_connections_per_client: int = default("server_max_connections_per_client")
    #: [server].search_slots: searches a server runs at once, in a lane of their own
    #: (decision 0057); reads and listings never wait behind them (None: ``search_lane``)
    server_search_slots: int | None = default("server_search_slots")
    #: [oauth]: JWT access tokens from these issuers are accepted over HTTP beside the
    #: tokens file (decision 0054); none: OAuth is off
    oauth_issuers: tuple[str, ...] = default("oauth_issuers")
    #: [oauth].audience: the resource URI a token's ``aud`` must name (None: as served)
    oauth_audience: str | None = default("oauth_audience")
    #: [oauth].jwks_uri: the issuers' keys (None: from each issuer's metadata)
    oauth_jwks_uri: str | None = default("oauth_jwks_uri")
    oauth_read_scope: str = default("oauth_read_scope")
    oauth_rebuild_scope: str = default("oauth_rebuild_scope")
    oauth_jwks_cache_seconds: float = default("oauth_jwks_cache_seconds")
    oauth_clock_skew_seconds: float = default("oauth_clock_skew_seconds")
    #: ``[[collections]]``: the folders served under names (decision 0041); empty = the
    #: one folder ``kb_path``, served as one collection named after it
    collections: tuple[CollectionSpec, ...] = default("collections")
    extra: dict[str, object] = field(default_factory=dict)
    #: where these settings came from; not a setting (equal settings from two files are
    #: equal, and a search answer does not depend on it)
    config_origin: ConfigOrigin = field(default_factory=ConfigOrigin, compare=False)

    @property
    def fusion(self) -> Fusion:
        """The ``[search]`` fusion keys as one value (checked when the config is read)."""
        return Fusion(method=cast(FusionMethod, self.search_fusion),
                      lexical_weight=float(self.search_lexical_weight),
                      lexical_weight_min=float(self.search_lexical_weight_min),
                      vector_scale=cast(VectorScale, self.search_vector_scale),
                      rrf_k=int(self.search_rrf_k))

    @property
    def search_lane(self) -> int:
        """Searches a server runs at once: ``[server].search_slots``, or unset 4 with the
        model in process and 12 with an embedding service (searches waiting for it hold
        their slot; decision 0057's addendum "four search slots")."""
        if self.server_search_slots is not None:
            return self.server_search_slots
        return SEARCH_SLOTS_LOCAL if self.embedding_provider == "local" else SEARCH_SLOTS_SERVICE

    @property
    def sqlite_path(self) -> Path:
        return self.index_dir / INDEX_DB_NAME

    @property
    def vectors_dir(self) -> Path:
        return self.index_dir / VECTORS_DIR_NAME

    @property
    def vectors_location(self) -> str:
        """``vectors_uri``, or the ``vectors`` folder in the index folder."""
        return self.vectors_uri or str(self.vectors_dir)

    @property
    def vectors_remote(self) -> bool:
        """True when the vectors are in object storage, not in a folder."""
        return self.vectors_uri is not None and is_remote_uri(self.vectors_uri)

    @property
    def store_url(self) -> str:
        """``database_url``, or the index folder's SQLite file as a URL (percent-encoded,
        so a folder name with ``?``, ``#`` or ``%`` names the same file)."""
        return self.database_url or f"sqlite:///{quote(str(self.sqlite_path))}"
