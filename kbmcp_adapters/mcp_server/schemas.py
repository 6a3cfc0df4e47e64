"""The tools' JSON Schemas, and the check of a call's arguments against the published one."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from jsonschema import Draft202012Validator, ValidationError

from kbmcp_core.context import CONTEXT_KINDS, MAX_CONTEXT_CHARS
from kbmcp_core.errors import InvalidQuery
from kbmcp_core.field_filters import MAX_CONDITIONS
from kbmcp_core.fields import Declared
from kbmcp_core.graph import DEFAULT_DEPTH as GRAPH_DEFAULT_DEPTH
from kbmcp_core.graph import DEFAULT_FAN_OUT as GRAPH_DEFAULT_FAN_OUT
from kbmcp_core.graph import DEFAULT_MAX_NODES as GRAPH_DEFAULT_MAX_NODES
from kbmcp_core.graph import DEFAULT_THRESHOLD as GRAPH_DEFAULT_THRESHOLD
from kbmcp_core.graph import MAX_DEPTH as GRAPH_MAX_DEPTH
from kbmcp_core.graph import MAX_FAN_OUT as GRAPH_MAX_FAN_OUT
from kbmcp_core.graph import MAX_NODES as GRAPH_MAX_NODES
from kbmcp_core.models import DATE_PATTERN
from kbmcp_core.ranges import DEFAULT_LINES, LONG_DOCUMENT_LINES, MAX_LINES
from kbmcp_core.search_request import (
    MAX_CONTEXT_CHUNKS,
    MAX_FILTER_ITEMS,
    MAX_QUERY_CHARS,
    SearchDefaults,
)
from kbmcp_core.settings import Settings

JsonObject = dict[str, Any]

MAX_PATH_CHARS = 4096
MAX_FILTER_CHARS = 512
#: The most passages per document a tool call may ask for (the command line has no cap).
MAX_CHUNKS_PER_DOCUMENT = 10
#: At least one character that is not white space.
NOT_BLANK = r"\S"
_NAME_SHOWN = 64


def _obj(properties: JsonObject, *required: str, closed: bool = False) -> JsonObject:
    schema: JsonObject = {"type": "object", "properties": properties}
    if required:
        schema["required"] = list(required)
    if closed:
        schema["additionalProperties"] = False
    return schema


def _typed(kind: str, description: str = "", **rules: Any) -> JsonObject:
    return {"type": kind, **rules, **({"description": description} if description else {})}


def _text(description: str = "", *, limit: int = MAX_FILTER_CHARS) -> JsonObject:
    return _typed("string", description, minLength=1, maxLength=limit, pattern=NOT_BLANK)


def _filter_list(description: str) -> JsonObject:
    return _typed("array", description, items=_text(), minItems=1, maxItems=MAX_FILTER_ITEMS)


def field_filter(declared: Declared, description: str) -> JsonObject:
    """``fields`` / ``fields_not``: field name -> a value, a list of values or a range. The
    declared fields are named here; ``field_filters.conditions`` checks names, values and
    the most fields (``MAX_CONDITIONS``), with messages that name the field."""
    named = ", ".join(f"{name} ({kind})" for name, kind in declared) or "none"
    return _typed("object", f"{description} At most {MAX_CONDITIONS} fields. Declared "
                  f"fields: {named}.")


def _date(description: str) -> JsonObject:
    """YYYY-MM-DD by the pattern; ``format: date`` then refuses days that do not exist."""
    return _typed("string", description, pattern=DATE_PATTERN, format="date")


# -- inputs ------------------------------------------------------------------------------------
def search_input(settings: Settings) -> JsonObject:
    """The search tool's arguments, their bounds and the defaults shown from what
    ``search_request.resolve`` applies for these settings."""
    d = SearchDefaults.from_settings(settings)
    return _obj(
        {
            "query": _text("What to look for, in natural language or keywords. \"a phrase\" "
                           "must appear as written; -word (at a word's start) leaves out "
                           "documents holding the word.", limit=MAX_QUERY_CHARS),
            "limit": _typed("integer", "How many passages to return.", minimum=1,
                            maximum=d.max_limit, default=d.default_limit),
            "path_globs": _filter_list("Only paths matching these globs (e.g. 'guides/**'); "
                                       "a glob starting with '!' excludes."),
            "tags_any": _filter_list("Documents with at least one of these tags."),
            "tags_all": _filter_list("Documents with all of these tags."),
            "date_from": _date("Documents dated on or after this day (YYYY-MM-DD)."),
            "date_to": _date("Documents dated on or before this day (YYYY-MM-DD)."),
            "category": _text("Documents whose frontmatter category is this."),
            "topic": _text("Documents whose frontmatter topic is this."),
            "fields": field_filter(d.fields, "Only documents whose declared front-matter "
                                   "fields match, e.g. {\"status\": \"draft\"}, {\"tags\": "
                                   "[\"a\", \"b\"]} (any of) or {\"year\": {\"gte\": "
                                   "2020, \"lt\": 2024}} (numbers and dates)."),
            "fields_not": field_filter(d.fields, "Leave out documents whose declared fields "
                                       "match (same shapes as fields)."),
            "chunks_per_document": _typed("integer",
                                          f"Most passages from one document (default "
                                          f"{d.chunks_per_document}).",
                                          minimum=1, maximum=MAX_CHUNKS_PER_DOCUMENT),
            "diversity": _typed("number", "MMR trade-off from 0 to 1: lower values favour passages "
                                "unlike those already picked, 1 keeps the relevance order "
                                f"(default {d.shape.diversity:g}).",
                                minimum=0, maximum=1),
            "context": _typed("string", "Return each hit with its surroundings: 'adjacent' "
                              "(neighbouring chunks) or 'section' (its whole section), capped "
                              f"at {MAX_CONTEXT_CHARS} characters (default "
                              f"'{d.shape.context}').", enum=list(CONTEXT_KINDS)),
            "context_chunks": _typed("integer", "Neighbours on each side for context='adjacent' "
                                     f"(default {d.shape.context_chunks}).",
                                     minimum=1, maximum=MAX_CONTEXT_CHUNKS),
            "rerank": _typed("boolean", f"Reorder the best {d.shape.rerank_candidates} "
                             "candidates with a cross-encoder (more accurate, ~0.5-1 s slower "
                             f"on a laptop; default {str(d.shape.rerank).lower()})."),
            "explain": _typed("boolean", "Return with each hit the numbers behind its score "
                              "(each leg's rank and score, the fusion weights, the reranker's "
                              "logit and trust) and what each filter removed.",
                              default=False),
        },
        "query",
        closed=True,
    )  # fmt: skip


DOCUMENT_INPUT = _obj(
    {
        "path": _text("e.g. 'guides/setup.md'", limit=MAX_PATH_CHARS),
        "start_line": _typed("integer", "Read from this line (1-based; a hit's start_line, "
                             "or next_start_line of the last reply).", minimum=1),
        "max_lines": _typed("integer", f"Most lines to return (default {DEFAULT_LINES} "
                            "with start_line).", minimum=1, maximum=MAX_LINES),
        "section": _text("Read the section under this heading ('Setup', or a trail "
                         "'Guide > Setup' from the outline)."),
        "page": _typed("integer", "Read this page of a PDF.", minimum=1),
        "max_chars": _typed("integer", "Most characters of text to return; the reply then "
                            "stops at a line end and says where to go on.", minimum=1),
        "outline": _typed("boolean", "Also return the headings (PDF: pages) with their line "
                          f"ranges; given unasked for documents over {LONG_DOCUMENT_LINES} "
                          "lines.", default=False),
    },
    "path",
    closed=True,
)  # fmt: skip
TOPICS_INPUT = _obj({}, closed=True)
GRAPH_INPUT = _obj(
    {
        "path": _text("Start from this document (as search hits give it), e.g. "
                      "'guides/setup.md'.", limit=MAX_PATH_CHARS),
        "query": _text("Or start from the documents a search for this finds.",
                       limit=MAX_QUERY_CHARS),
        "depth": _typed("integer", "Hops from the start documents.", minimum=0,
                        maximum=GRAPH_MAX_DEPTH, default=GRAPH_DEFAULT_DEPTH),
        "fan_out": _typed("integer", "Most neighbours kept per document.", minimum=1,
                          maximum=GRAPH_MAX_FAN_OUT, default=GRAPH_DEFAULT_FAN_OUT),
        "threshold": _typed("number", "Least cosine similarity of a link.", minimum=-1,
                            maximum=1, default=GRAPH_DEFAULT_THRESHOLD),
        "max_nodes": _typed("integer", "Most documents in the graph.", minimum=1,
                            maximum=GRAPH_MAX_NODES, default=GRAPH_DEFAULT_MAX_NODES),
    },
    closed=True,
)  # fmt: skip

# -- outputs: one plain type per property; a field whose value is unknown is left out ----------
_STR, _INT, _NUM, _BOOL = ({"type": t} for t in ("string", "integer", "number", "boolean"))
_STRINGS = _typed("array", items=_STR)
_COUNT = _typed("integer", minimum=0)
_HIT_FIELDS = ("path", "title", "heading", "heading_path", "content", "score", "tags")
_RUN_COUNTS = ("scanned", "added", "updated", "metadata_only", "renamed", "deleted",
               "unchanged", "skipped", "failed", "chunks_embedded", "chunks_reused",
               "sizes_backfilled")  # fmt: skip

#: While serve's start run has not made the folder searchable (decision 0024).
_INDEXING = _typed("object", "serve is still building the index: status says how far "
                   "(\"indexing: N of M files\"); tell the user and try again shortly",
                   properties={"status": _STR, "done": _COUNT, "total": _COUNT,
                               "started": _STR}, required=["status"])
#: ``kbmcp_core.explain``: lexical_part + vector_part is the hit's score
_HIT_EXPLAIN = _obj(
    {"lexical": _obj({"rank": _INT, "score": _NUM}, "rank", "score"),
     "vector": _obj({"rank": _INT, "similarity": _NUM}, "rank", "similarity"),
     "fusion": _obj({"method": _STR, "lexical_weight": _NUM, "vector_weight": _NUM,
                     "lexical_part": _NUM, "vector_part": _NUM},
                    "method", "lexical_weight", "vector_weight", "lexical_part", "vector_part"),
     "rerank": _obj({"probability": _NUM, "logit": _NUM, "trust": _NUM, "fused_rank": _INT},
                    "probability", "logit", "trust", "fused_rank")},
    "fusion",
)  # fmt: skip
_SEARCH_EXPLAIN = _obj(
    {"documents": _COUNT, "chunks": _COUNT, "searched_documents": _COUNT,
     "searched_chunks": _COUNT,
     "filters": _typed("array", items=_obj(
         {"filter": _STR, "removed_documents": _COUNT, "removed_chunks": _COUNT},
         "filter", "removed_documents", "removed_chunks"))},
    "documents", "chunks", "filters", "searched_documents", "searched_chunks",
)  # fmt: skip
SEARCH_OUTPUT = _obj(
    {
        "results": _typed("array", items=_obj(
            {"path": _STR, "title": _STR, "heading": _STR, "heading_path": _STRINGS,
             "content": _STR, "score": _NUM, "tags": _STRINGS, "date": _STR,
             "start_line": _INT, "end_line": _INT, "page": _INT, "uri": _STR,
             "matches": _typed("array", "[start, end) character offsets in content where "
                               "the query matched", items=_typed("array", items=_INT,
                                                                 minItems=2, maxItems=2)),
             "context": _obj({"kind": _STR, "expanded": _BOOL, "text": _STR,
                              "chunk_ids": _typed("array", items=_INT), "truncated": _BOOL,
                              "start_line": _INT, "end_line": _INT, "start_page": _INT,
                              "end_page": _INT},
                             "kind", "expanded", "text", "chunk_ids", "truncated"),
             "answer_lines": _typed("array", "[first, last]: the lines inside start_line"
                                    "..end_line that answer the query", items=_INT,
                                    minItems=2, maxItems=2),
             "fused_score": _typed("number", "the hit's own fused score when score is "
                                   "another: the reranker's blend the results are "
                                   "ordered by, or the score of the place a question's "
                                   "section took inside its document"),
             "rerank_score": _NUM, "explain": _HIT_EXPLAIN,
             "collection": _typed("string", "the collection the hit is from (a server "
                                  "of several collections)")},
            *_HIT_FIELDS)),
        "low_confidence": _BOOL,
        "filter_applied": {"type": "object"},
        "notice": _STR,
        "indexing": _INDEXING,
        "query_applied": _obj({"terms": _STRINGS, "phrases": _STRINGS, "excluded": _STRINGS},
                              "terms", "phrases", "excluded"),
        "explain": _SEARCH_EXPLAIN,
        "rerank": _obj({"model": _STR, "candidates": _COUNT, "ms": _NUM, "trust": _NUM},
                       "model", "candidates", "ms", "trust"),
    },
    "results", "low_confidence", "filter_applied",
)  # fmt: skip
DOCUMENT_OUTPUT = _obj(
    {"path": _STR, "title": _STR, "date": _STR, "topic": _STR, "tags": _STRINGS,
     "content": _STR, "truncated": _BOOL,
     "is_range": _typed("boolean", "true when content is not the whole document"),
     "total_lines": _COUNT, "start_line": _COUNT, "end_line": _COUNT,
     "next_start_line": _typed("integer", "where the next range starts; absent at the end",
                               minimum=1),
     "outline": _typed("array", items=_obj(
         {"heading": _STR, "level": _COUNT, "trail": _STRINGS, "start_line": _COUNT,
          "end_line": _COUNT, "page": _COUNT},
         "heading", "level", "trail", "start_line", "end_line")),
     "outline_note": _STR},
    "path", "title", "tags", "content", "truncated", "is_range", "start_line", "end_line",
)  # fmt: skip
TOPICS_OUTPUT = _obj(
    {
        "topics": _typed("array", items=_obj(
            {"prefix": _STR, "uri": _STR, "documents": _COUNT, "titles": _STRINGS},
            "prefix", "uri", "documents", "titles")),
        "documents": _COUNT,
        "last_indexed": _STR,
        "watcher": _obj({"alive": _BOOL, "last_sync": _STR, "last_error": _STR}, "alive"),
        "indexing": _INDEXING,
    },
    "topics", "documents",
)  # fmt: skip
GRAPH_OUTPUT = _obj(
    {
        "nodes": _typed("array", items=_obj(
            {"path": _STR, "title": _STR, "uri": _STR, "depth": _COUNT, "seed": _BOOL,
             "x": _NUM, "y": _NUM},
            "path", "title", "depth", "seed", "x", "y")),
        "edges": _typed("array", items=_obj(
            {"source": _STR, "target": _STR, "similarity": _NUM},
            "source", "target", "similarity")),
        "bounds": {"type": "object"},
        "seeded_by": {"type": "object"},
        "truncated": _BOOL,
        "truncation": _typed("object", "what the bounds cut: fan_out, max_nodes -> count",
                             additionalProperties=_COUNT),
    },
    "nodes", "edges", "bounds", "seeded_by", "truncated", "truncation",
)  # fmt: skip
REBUILD_OUTPUT = _obj(
    {**dict.fromkeys(_RUN_COUNTS, _COUNT), "seconds": _typed("number", minimum=0),
     "warnings": _STRINGS,
     "skipped_reasons": _typed("object", "why paths were skipped: reason -> count",
                               additionalProperties=_COUNT),
     "failed_reasons": _typed("object", "why files failed: reason -> count",
                              additionalProperties=_COUNT)},
    *_RUN_COUNTS, "seconds", "warnings", "skipped_reasons", "failed_reasons",
)  # fmt: skip


# -- the check ---------------------------------------------------------------------------------
#: When a value breaks several rules, the one reported first (the most basic).
_RULE_ORDER = ("type", "minItems", "maxItems", "minLength", "maxLength", "pattern", "format",
               "minimum", "maximum")


class ArgumentChecker:
    """Checks a tool call's arguments against the tool's input schema, with ``jsonschema``.

    A null optional argument counts as omitted. A failure raises ``InvalidQuery`` (code
    ``invalid_argument``) whose message names the argument and the rule, never echoing a
    long value back.
    """

    def __init__(self, schema: Mapping[str, Any]) -> None:
        Draft202012Validator.check_schema(schema)
        self.schema = schema
        self._validator = Draft202012Validator(
            schema, format_checker=Draft202012Validator.FORMAT_CHECKER
        )
        self._properties: Mapping[str, Any] = schema.get("properties", {})

    def check(self, arguments: Mapping[str, Any]) -> JsonObject:
        args = {k: v for k, v in arguments.items() if not (v is None and k in self._properties)}
        errors = list(self._validator.iter_errors(args))
        if errors:
            raise InvalidQuery(self._explain(min(errors, key=self._rank), args))
        return {k: _as_int(v) if self._properties[k].get("type") == "integer" else v
                for k, v in args.items()}

    def _rank(self, error: ValidationError) -> tuple[int, int, int, int]:
        path = list(error.absolute_path)
        if not path:  # about the arguments object: unknown ones first, then missing ones
            return (0 if error.validator == "additionalProperties" else 1, 0, 0, 0)
        names = list(self._properties)
        where = names.index(path[0]) if path[0] in names else len(names)
        rule = str(error.validator)
        order = _RULE_ORDER.index(rule) if rule in _RULE_ORDER else len(_RULE_ORDER)
        return (2, where, len(path), order)

    def _explain(self, error: ValidationError, args: Mapping[str, Any]) -> str:
        rule, value = str(error.validator), error.instance
        path = list(error.absolute_path)
        if not path:
            if rule == "additionalProperties":
                unknown = sorted(set(args) - set(self._properties))
                expected = ", ".join(self._properties) or "no arguments"
                return f"unknown argument {_name(unknown[0])}; expected: {expected}"
            if rule == "required":
                missing = [n for n in error.validator_value if n not in args]
                return f"missing required argument {_name(missing[0])}"
            return f"the arguments must be an object, got {_json_type(value)}"
        name = _name(str(path[0]))
        if len(path) > 1:
            name = f"item {int(path[1]) + 1} of {name}"
        rules: Mapping[str, Any] = error.schema if isinstance(error.schema, Mapping) else {}
        if rule == "type":
            return f"{name} must be {_KINDS.get(str(error.validator_value), 'valid')}, " \
                   f"got {_json_type(value)}"
        if rule == "minItems":
            return f"{name} must not be empty; omit it to apply no filter"
        if rule == "maxItems":
            return f"{name} has {len(value)} items; at most {error.validator_value}"
        if rule == "minLength" or (rule == "pattern" and error.validator_value == NOT_BLANK):
            return f"{name} must not be empty"
        if rule == "maxLength":
            return f"{name} is {len(value)} characters long; the limit is {error.validator_value}"
        if rule == "pattern" and error.validator_value == DATE_PATTERN:
            return f"{name} must be a date as YYYY-MM-DD"
        if rule == "format" and error.validator_value == "date":
            return f"{name} is not a real date (YYYY-MM-DD)"
        if rule == "enum":
            return f"{name} must be one of {', '.join(map(str, error.validator_value))}"
        if rule in ("minimum", "maximum"):
            return f"{name} must be {_bounds(rules)}, got {_number(value)}"
        return f"{name} breaks the rule {rule!r} of its schema"


def _bounds(rules: Mapping[str, Any]) -> str:
    """A number's range in words; an open end is left unsaid ("at least 1")."""
    low, high = rules.get("minimum"), rules.get("maximum")
    if low is not None and high is not None:
        return f"between {low} and {high}"
    return f"at least {low}" if high is None else f"at most {high}"


_KINDS = {
    "string": "a string",
    "integer": "an integer",
    "number": "a number",
    "boolean": "true or false",
    "array": "an array of strings",
    "object": "an object",
}


def _name(name: str) -> str:
    return repr(name[:_NAME_SHOWN])


def _as_int(value: Any) -> Any:
    """JSON Schema counts 5.0 as an integer; the use-cases get 5."""
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        return int(value)
    return value


def _number(value: Any) -> str:
    shown = str(_as_int(value))
    return shown if len(shown) <= 24 else f"{shown[:12]}... ({len(shown)} digits)"


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__
