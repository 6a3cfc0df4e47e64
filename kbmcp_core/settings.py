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
from kbmcp_core.fusion import DEFAULT_FUSION, Fusion, FusionMethod, VectorScale
from kbmcp_core.passages import PASSAGE_CANDIDATES
from kbmcp_core.rerank import RERANK_CANDIDATES

DEFAULT_EXCLUDE_DIRS: tuple[str, ...] = (
    ".venv",
    "venv",
    "__pycache__",
    ".mypy_cache",
    ".pytest_cache",
    ".ruff_cache",
    ".tox",
    ".idea",
    ".vscode",
    ".cache",
    ".trash",
    ".obsidian",
    "dist",
    "build",
)

#: Directory names never walked, whatever the configuration says.
FAIL_SAFE_DIRS: tuple[str, ...] = (".git", ".svn", ".hg", "node_modules")

INDEX_DIR_NAME = ".kb-mcp"
#: What an index folder holds (a SQLite index): the database, the vectors, the writer lock.
#: A folder holding the database and one of the other two is an index, whatever its name,
#: and is never walked (``kbmcp_adapters.filesystem.exclusion.holds_index``).
INDEX_DB_NAME = "index.db"
VECTORS_DIR_NAME = "vectors"
WRITER_LOCK_NAME = "writer.lock"
IGNORE_FILE_NAME = ".kb-mcpignore"
CONFIG_FILE_NAME = "kb-mcp.toml"
#: The cross-encoder ``[search].reranker`` names unless configured (a packaged model).
DEFAULT_RERANKER = "kb-mcp/ms-marco-MiniLM-L-12-v2-int8"


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
    kb_path: Path
    index_dir: Path
    database_url: str | None = None
    #: where the vectors live: None (``<index_dir>/vectors``), a folder, or an object-store
    #: URI such as ``s3://bucket/prefix`` (see ``vectors_location``)
    vectors_uri: str | None = None
    vectors_storage_options: StorageOptions = field(default_factory=StorageOptions)
    #: the model for a new index: the integer copy of MiniLM since decision 0046
    embedding_model: str = "kb-mcp/all-MiniLM-L6-v2-int8-dynamic"
    #: the config named no model: an index that records one keeps it
    #: (``kbmcp_adapters.app.index_model``, decision 0046); set by ``build_settings``
    embedding_model_follows_index: bool = False
    embedding_batch_size: int = 32
    embedding_threads: int | None = None
    #: ``[embedding]`` provider: "local" (in process) or "openai-compatible", a service the
    #: user runs, with the keys below (decision 0037; checked by embedding/service_config)
    embedding_provider: str = "local"
    embedding_base_url: str | None = None
    embedding_query_model: str | None = None
    embedding_document_model: str | None = None
    embedding_query_prefix: str = ""
    embedding_document_prefix: str = ""
    embedding_dimension: int | None = None
    embedding_max_input_chars: int = 8192
    embedding_timeout_s: float = 60.0
    embedding_retries: int = 4
    #: the NAME of the environment variable holding the service's API key (never the key)
    embedding_api_key_env: str | None = None
    #: the service's model reads Chinese, Japanese and Korean (else its vector leg is
    #: weighed down for such queries, as the default model's is)
    embedding_multilingual: bool = False
    model_cache_dir: Path | None = None
    enabled_formats: tuple[str, ...] = ("md",)
    #: ``[parsers]`` budgets of one converted file, and its worker pool (decision 0022)
    parsers_max_output_chars: int = 10_000_000
    parsers_max_elements: int = 300_000
    parsers_timeout_seconds: float = 60.0
    parsers_isolate: bool = True
    parsers_workers: int = 2
    parsers_memory_limit_mb: int = 1024
    exclude_dirs: tuple[str, ...] = DEFAULT_EXCLUDE_DIRS
    chunk_max_tokens: int | None = None
    chunk_min_tokens: int = 24
    search_default_limit: int = 5
    search_max_limit: int = 50
    search_chunks_per_document: int = 4
    #: MMR λ (1.0 = off), context kind and neighbours, reranking: decision 0016
    search_diversity: float = 1.0
    search_context: str = "none"
    search_context_chunks: int = 1
    search_rerank: bool = False
    #: the cross-encoder ``rerank`` runs (a packaged model's name): decision 0016
    search_reranker: str = DEFAULT_RERANKER
    search_rerank_candidates: int = RERANK_CANDIDATES
    #: best candidates re-scored by their nearest paragraph, 0 = off: decision 0028
    search_passage_candidates: int | None = PASSAGE_CANDIDATES
    #: how the two legs are fused (``fusion`` property): decision 0015
    search_fusion: str = DEFAULT_FUSION.method
    search_lexical_weight: float = DEFAULT_FUSION.lexical_weight
    search_lexical_weight_min: float = DEFAULT_FUSION.lexical_weight_min
    search_vector_scale: str = DEFAULT_FUSION.vector_scale
    search_rrf_k: int = DEFAULT_FUSION.rrf_k
    #: ``[fields]``: the front-matter keys indexed for filtering, (name, type) sorted by
    #: name (``fields.declare``; decision 0036)
    declared_fields: Declared = ()
    watch: bool = True
    watch_debounce_ms: int = 400
    writer_lock_timeout_s: float = 30.0
    #: open the index for reading only, whatever the file permissions (``serve
    #: --read-only``): nothing in the index folder is created or changed
    read_only: bool = False
    #: [server].tokens_file: the tokens file of `serve` and `kb-mcp token` (else in index_dir)
    server_tokens_file: Path | None = None
    #: [server].index_on_start: `serve` (not read-only) builds a missing index and brings a
    #: stale one up to date in the background as it starts (decision 0024; --no-index: off)
    server_index_on_start: bool = True
    #: [server].trusted_proxies: addresses or networks whose X-Forwarded-* headers `serve`
    #: believes (none by default; --trusted-proxy adds to them)
    server_trusted_proxies: tuple[str, ...] = ()
    #: [oauth]: JWT access tokens from these issuers are accepted over HTTP beside the
    #: tokens file (decision 0054); none: OAuth is off
    oauth_issuers: tuple[str, ...] = ()
    #: [oauth].audience: the resource URI a token's ``aud`` must name (None: as served)
    oauth_audience: str | None = None
    #: [oauth].jwks_uri: the issuers' keys (None: from each issuer's metadata)
    oauth_jwks_uri: str | None = None
    oauth_read_scope: str = "kb:read"
    oauth_rebuild_scope: str = "kb:rebuild"
    oauth_jwks_cache_seconds: float = 300.0
    oauth_clock_skew_seconds: float = 60.0
    #: ``[[collections]]``: the folders served under names (decision 0041); empty = the
    #: one folder ``kb_path``, served as one collection named after it
    collections: tuple[CollectionSpec, ...] = ()
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
