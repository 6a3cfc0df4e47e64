"""The search request: its bounds, its defaults, and the one place a request is checked.

Every front (the MCP tool, ``kb-mcp search``, the local search socket, /ui and Python
callers) hands its arguments to ``KnowledgeBase.search``, whose searcher turns them into
one frozen request with ``resolve``: the values refused with a message that says what to
fix, the limit clamped, and every option the caller left out taken from the
``SearchDefaults`` (the ``[search]`` settings). The MCP tool's JSON Schema states the same
bounds to clients, built from the constants here.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import date
from typing import TYPE_CHECKING, Literal, cast

from kbmcp_core.context import CONTEXT_KINDS, MAX_ADJACENT, ContextKind
from kbmcp_core.errors import InvalidQuery
from kbmcp_core.field_filters import FieldCondition, as_json, conditions
from kbmcp_core.fields import Declared
from kbmcp_core.models import DATE_PATTERN, DocumentFilter
from kbmcp_core.query_syntax import ParsedQuery, parse_query
from kbmcp_core.settings_keys import default
from kbmcp_core.shaping import ShapeOptions

if TYPE_CHECKING:
    from kbmcp_core.settings import Settings

Mode = Literal["hybrid", "vector", "lexical"]
MODES: tuple[Mode, ...] = ("hybrid", "vector", "lexical")

MAX_QUERY_CHARS = 2000
MAX_FILTER_ITEMS = 64
#: Neighbours on each side that ``context="adjacent"`` may ask for.
MAX_CONTEXT_CHUNKS = MAX_ADJACENT
#: The filters that take several values (tuples in a request).
_SEVERAL = frozenset({"path_globs", "tags_any", "tags_all"})
_DATE = re.compile(DATE_PATTERN)
_NOT_TEXT = re.compile("[\x00\ud800-\udfff]")
_SURROGATE = re.compile("[\ud800-\udfff]")
#: NUL, the other C0 controls and DEL: no tag, category, topic or served path holds one
_CONTROL = re.compile("[\x00-\x1f\x7f]")


@dataclass(frozen=True, slots=True)
class SearchDefaults:
    """What a search uses where its request says nothing, and the largest limit."""

    limit: int = default("search_default_limit")
    max_limit: int = default("search_max_limit")
    chunks_per_document: int = default("search_chunks_per_document")
    #: MMR λ, context kind and neighbours, reranking, and how many candidates it reads
    shape: ShapeOptions = field(default_factory=ShapeOptions)
    #: the ``[fields]`` declarations a ``fields`` filter may name
    fields: Declared = ()

    @classmethod
    def from_settings(cls, s: Settings) -> SearchDefaults:
        """The ``[search]`` settings as defaults (checked when the config was read)."""
        return cls(limit=s.search_default_limit, max_limit=s.search_max_limit,
                   chunks_per_document=s.search_chunks_per_document,
                   shape=ShapeOptions(diversity=float(s.search_diversity),
                                      context=cast(ContextKind, s.search_context),
                                      context_chunks=s.search_context_chunks,
                                      rerank=s.search_rerank,
                                      rerank_candidates=s.search_rerank_candidates),
                   fields=s.declared_fields)

    @property
    def default_limit(self) -> int:
        """The limit of a request that gives none."""
        return clamp_limit(self.limit, self.max_limit)


@dataclass(frozen=True, slots=True)
class SearchRequest:
    """One search as asked for; None = the default (``resolve`` fills every one in)."""

    query: str
    limit: int | None = None
    path_globs: tuple[str, ...] | None = None
    tags_any: tuple[str, ...] = ()
    tags_all: tuple[str, ...] = ()
    date_from: str | None = None
    date_to: str | None = None
    category: str | None = None
    topic: str | None = None
    chunks_per_document: int | None = None
    mode: Mode = "hybrid"
    #: MMR λ in [0, 1] (1 = off), ``none``/``adjacent``/``section``, neighbours per side
    #: for ``adjacent``, cross-encoder reranking
    diversity: float | None = None
    context: str | None = None
    context_chunks: int | None = None
    rerank: bool | None = None
    #: per hit, the numbers behind its score (``explain``; off: no extra work)
    explain: bool | None = None
    #: declared-field filters: an object of field name -> value, list or range as a
    #: front gives it; ``resolve`` turns each into ``FieldCondition``s (``field_filters``)
    fields: Mapping[str, object] | tuple[FieldCondition, ...] | None = None
    fields_not: Mapping[str, object] | tuple[FieldCondition, ...] | None = None

    @classmethod
    def of(cls, query: str, **raw: object) -> SearchRequest:
        """A request from keyword arguments as the fronts hold them: any iterable (a JSON
        list) for the filters that take several values, None for an argument not given.
        An unknown name is a ``TypeError``."""
        values = {k: tuple(cast(Iterable[str], v)) if k in _SEVERAL else v
                  for k, v in raw.items() if v is not None}
        return cls(query, **values)  # type: ignore[arg-type]

    def filters(self) -> dict[str, object]:
        """The filters that apply, echoed back in the response."""
        out: dict[str, object] = {}
        if self.path_globs is not None:
            out["path_globs"] = list(self.path_globs)
        if self.tags_any:
            out["tags_any"] = list(self.tags_any)
        if self.tags_all:
            out["tags_all"] = list(self.tags_all)
        for key in ("date_from", "date_to", "category", "topic"):
            value = getattr(self, key)
            if value is not None:
                out[key] = value
        for key in ("fields", "fields_not"):
            value = getattr(self, key)
            if isinstance(value, tuple) and value:
                out[key] = as_json(value)
            elif value:  # as asked: ``resolve`` has not checked it yet
                out[key] = dict(value) if isinstance(value, Mapping) else value
        return out



@dataclass(frozen=True, slots=True)
class ResolvedSearch:
    """One search once checked, with every default taken and nothing left optional: what
    the stages of ``Searcher.search`` read (``resolve`` builds it, as httpx's
    ``build_request`` builds a request)."""

    #: the query as asked (NUL and lone surrogates made spaces), and as the syntax read it
    query: str
    parsed: ParsedQuery
    mode: Mode
    limit: int
    chunks_per_document: int
    #: MMR λ, context, neighbours, reranking and its candidates
    shape: ShapeOptions
    explain: bool
    #: the document-level filters for the store, and as echoed back in the response
    documents: DocumentFilter
    filters: Mapping[str, object]

    @property
    def text(self) -> str:
        """What the legs search for: the query without its exclusions."""
        return self.parsed.text

    @property
    def applied(self) -> dict[str, list[str]] | None:
        """The query's phrases and exclusions, echoed back when it used them."""
        return self.parsed.applied() if self.parsed.has_syntax else None

    @property
    def filtered(self) -> bool:
        """Whether a filter or an excluded term narrows the documents searched."""
        return bool(self.filters or self.parsed.excluded)


def resolve(req: SearchRequest, defaults: SearchDefaults) -> ResolvedSearch:
    """THE check of a search request: malformed values are refused with a message that
    says what to fix (the query syntax last); the result has the limit clamped, every
    default filled in and the query parsed."""
    if not isinstance(req.query, str) or not req.query.strip():
        raise InvalidQuery("query must be a non-empty string")
    # NUL and lone surrogates (a JSON "\\ud800" escape decodes to one) are not text any
    # tokenizer or database can take: they become spaces.
    query = _NOT_TEXT.sub(" ", req.query)
    if len(req.query) > MAX_QUERY_CHARS:
        raise InvalidQuery(f"query is {len(req.query)} characters; the limit is {MAX_QUERY_CHARS}")
    check_mode(req.mode)
    if req.path_globs is not None and not req.path_globs:
        raise InvalidQuery("path_globs is empty; omit it to search everything")
    for name in ("path_globs", "tags_any", "tags_all"):
        items = getattr(req, name) or ()
        if len(items) > MAX_FILTER_ITEMS:
            raise InvalidQuery(f"{name} has more than {MAX_FILTER_ITEMS} items")
        if any(not isinstance(i, str) or not i.strip() for i in items):
            raise InvalidQuery(f"{name} items must be non-empty strings")
        if any(_SURROGATE.search(i) for i in items):
            raise InvalidQuery(f"{name} items must be valid Unicode text (no lone surrogates)")
        for item in items:
            check_filter_text(f"{name} items", item)
    for name in ("category", "topic"):
        value = getattr(req, name)
        if value is not None and not isinstance(value, str):
            raise InvalidQuery(f"{name} must be a string")
        if value is not None and _SURROGATE.search(value):
            raise InvalidQuery(f"{name} must be valid Unicode text (no lone surrogates)")
        if value is not None:
            check_filter_text(name, value)
    for name in ("date_from", "date_to"):
        _check_date(name, getattr(req, name))
    if req.date_from and req.date_to and req.date_from > req.date_to:
        raise InvalidQuery("date_from is after date_to")
    limit = clamp_limit(int(defaults.limit if req.limit is None else req.limit),
                        defaults.max_limit)
    per_doc = req.chunks_per_document
    if per_doc is not None and per_doc < 1:
        raise InvalidQuery("chunks_per_document must be at least 1")
    check_options(req.diversity, req.context, req.context_chunks, req.rerank)
    if req.explain is not None and not isinstance(req.explain, bool):
        raise InvalidQuery("explain must be true or false")
    wanted = conditions(req.fields, defaults.fields, "fields")
    unwanted = conditions(req.fields_not, defaults.fields, "fields_not")
    d = defaults.shape
    shape = replace(d, diversity=d.diversity if req.diversity is None else float(req.diversity),
                    context=d.context if req.context is None else _context(req.context),
                    context_chunks=req.context_chunks or d.context_chunks,
                    rerank=d.rerank if req.rerank is None else req.rerank)
    checked = replace(req, query=query, fields=wanted or None, fields_not=unwanted or None)
    return ResolvedSearch(
        query=query, parsed=parse_query(query), mode=req.mode, limit=limit,
        chunks_per_document=per_doc or defaults.chunks_per_document, shape=shape,
        explain=bool(req.explain), documents=document_filter(checked),
        filters=checked.filters())


def _context(kind: str) -> ContextKind:
    """``kind`` (checked by ``check_options``) as the context kind it names."""
    for known in CONTEXT_KINDS:
        if known == kind:
            return known
    raise InvalidQuery(f"context must be one of {', '.join(CONTEXT_KINDS)}")


def clamp_limit(limit: int, max_limit: int) -> int:
    """A limit within 1 and ``max_limit``: a larger one is cut, not refused."""
    return max(1, min(limit, max_limit))


def check_mode(mode: object) -> None:
    """Refuse a retriever that is not one of ``MODES``."""
    if mode not in MODES:
        raise InvalidQuery(f"mode must be one of {', '.join(MODES)}")


def needs_embedder(mode: object) -> bool:
    """Whether a search in ``mode`` (None: the default, hybrid) embeds its query, so
    the embedding model must be loaded: every mode but ``lexical``."""
    return mode != "lexical"


def check_options(diversity: object, context: object, context_chunks: object,
                  rerank: object) -> None:
    """Refuse shaping values no search can use (from a request or from ``[search]``),
    naming the parameter and what it takes."""
    if diversity is not None and (isinstance(diversity, bool)
                                  or not isinstance(diversity, int | float)
                                  or not 0.0 <= float(diversity) <= 1.0):
        raise InvalidQuery("diversity must be a number from 0 to 1 (1 = no diversification), "
                           f"got {str(diversity)[:40]!r}")
    if context is not None and context not in CONTEXT_KINDS:
        raise InvalidQuery(f"context must be one of {', '.join(CONTEXT_KINDS)}, "
                           f"got {str(context)[:40]!r}")
    if context_chunks is not None and (isinstance(context_chunks, bool)
                                       or not isinstance(context_chunks, int)
                                       or not 1 <= context_chunks <= MAX_CONTEXT_CHUNKS):
        raise InvalidQuery(f"context_chunks must be an integer from 1 to {MAX_CONTEXT_CHUNKS}, "
                           f"got {str(context_chunks)[:40]!r}")
    if rerank is not None and not isinstance(rerank, bool):
        raise InvalidQuery("rerank must be true or false")


def check_filter_text(name: str, value: str) -> None:
    """Refuse a value that names what documents to look at (a filter, the graph's start
    document) when it holds NUL or another control character: no stored document can
    match it, and the refusal is the same whichever store holds the index."""
    if _SURROGATE.search(value):
        raise InvalidQuery(f"{name} must be valid Unicode text (no lone surrogates)")
    if found := _CONTROL.search(value):
        raise InvalidQuery(f"{name} must not contain NUL or other control characters "
                           f"(found U+{ord(found.group()):04X})")


def _check_date(name: str, value: str | None) -> None:
    if value is None:
        return
    if not isinstance(value, str) or not _DATE.match(value):
        raise InvalidQuery(f"{name} must be a date as YYYY-MM-DD, got {str(value)[:40]!r}")
    try:
        date.fromisoformat(value)
    except ValueError:
        raise InvalidQuery(f"{name} is not a real date: {value!r}") from None


def document_filter(req: SearchRequest) -> DocumentFilter:
    """The request's document-level filters, for the store to apply."""
    return DocumentFilter(
        path_globs=req.path_globs, tags_any=req.tags_any, tags_all=req.tags_all,
        date_from=req.date_from, date_to=req.date_to, category=req.category, topic=req.topic,
        fields=req.fields if isinstance(req.fields, tuple) else (),
        fields_not=req.fields_not if isinstance(req.fields_not, tuple) else ())
