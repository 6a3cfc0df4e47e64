"""The ``get_documents`` tool: several offered documents in one call, within a total
size, through the facade's ``get_documents`` (``kbmcp_core.batch_read``)."""

from __future__ import annotations

from kbmcp_adapters.mcp_server.host import Host
from kbmcp_adapters.mcp_server.schemas import (
    DOCUMENT_OUTPUT,
    MAX_PATH_CHARS,
    NOT_BLANK,
    JsonObject,
)
from kbmcp_core.batch_read import DEFAULT_BATCH_CHARS, MAX_BATCH_CHARS, MAX_BATCH_DOCUMENTS
from kbmcp_core.errors import IndexNotFound

TITLE = "Read several documents"
DESCRIPTION = (
    "Several documents in one call: a list of paths (as search hits give them) or a glob "
    "over the offered paths (e.g. 'guides/*.md'; * crosses /), read in that order while "
    f"their texts fit max_chars (default {DEFAULT_BATCH_CHARS}, at most {MAX_BATCH_CHARS} "
    "characters in total). Nothing is cut: a document that does not fit is listed in "
    "left_out with the reason (read it alone with get_document), and a path that cannot "
    "be read (refused, not offered) is listed in errors while the others are still read."
)

_PATH = {"type": "string", "minLength": 1, "maxLength": MAX_PATH_CHARS, "pattern": NOT_BLANK}
_STR, _INT = {"type": "string"}, {"type": "integer", "minimum": 0}

INPUT: JsonObject = {
    "type": "object",
    "properties": {
        "paths": {"type": "array", "items": _PATH, "minItems": 1,
                  "maxItems": MAX_BATCH_DOCUMENTS, "description": "The documents, e.g. "
                  "['guides/setup.md', 'notes/keys.md']; give this or glob."},
        "glob": {**_PATH, "description": "Or every offered document whose path matches "
                 f"(sorted by path; the first {MAX_BATCH_DOCUMENTS} are considered)."},
        "max_chars": {"type": "integer", "minimum": 1, "maximum": MAX_BATCH_CHARS,
                      "default": DEFAULT_BATCH_CHARS,
                      "description": "The most characters of text in the reply, all "
                      "documents together."},
    },
    "additionalProperties": False,
}

OUTPUT: JsonObject = {
    "type": "object",
    "properties": {
        "documents": {"type": "array", "description": "each as get_document returns it",
                      "items": DOCUMENT_OUTPUT},
        "left_out": {"type": "array", "description": "offered documents not sent, and why",
                     "items": {"type": "object", "properties": {"path": _STR, "reason": _STR},
                               "required": ["path", "reason"]}},
        "errors": {"type": "array", "description": "paths that cannot be read",
                   "items": {"type": "object",
                             "properties": {"path": _STR, "code": _STR, "message": _STR},
                             "required": ["path", "code", "message"]}},
        "max_chars": _INT,
        "chars": _INT,
        "matched": _INT,
        "notice": _STR,
        "indexing": {"type": "object", "description": "serve is still building the index: "
                     "status says how far", "properties": {"status": _STR},
                     "required": ["status"]},
    },
    "required": ["documents", "left_out", "errors", "max_chars", "chars"],
}


async def get_documents(host: Host, args: JsonObject) -> JsonObject:
    """From one collection (on a host of one: its one), named in the answer when the
    host has several."""
    name = host.one(args.pop("collection", None), "get_documents")
    rt = host.runtimes[name]
    max_chars = int(args.get("max_chars", DEFAULT_BATCH_CHARS))

    def run() -> JsonObject:
        try:
            kb = rt.open_index()
        except IndexNotFound:  # serve's start run may be building it (decision 0024)
            indexing = rt.indexing()
            if indexing is None:
                raise
            return {"documents": [], "left_out": [], "errors": [], "max_chars": max_chars,
                    "chars": 0, "notice": f"{indexing['status']}; nothing is offered "
                    "until the index exists: try again shortly", "indexing": indexing}
        batch = kb.get_documents(args.get("paths"), glob=args.get("glob"),
                                 max_chars=max_chars)
        out: JsonObject = {
            "documents": [d.as_dict() for d in batch.documents],
            "left_out": [{"path": x.path, "reason": x.reason} for x in batch.left_out],
            "errors": [{"path": e.path, "code": e.code, "message": e.message}
                       for e in batch.errors],
            "max_chars": batch.max_chars,
            "chars": batch.chars,
            "matched": batch.matched,
            "notice": "; ".join(batch.notices) or None,
        }
        return out

    return host.labelled(name, await rt.in_thread(run))


__all__ = ["DESCRIPTION", "INPUT", "OUTPUT", "TITLE", "get_documents"]
