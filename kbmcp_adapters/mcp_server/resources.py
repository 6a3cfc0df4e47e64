"""MCP resources over the host's 1..N collections: topic groups in the listing, documents
by template, and guarded reads (decisions 0042, 0051)."""

from __future__ import annotations

import dataclasses
import logging
from typing import Any

import mcp_types as types
from mcp.shared.exceptions import MCPError

from kbmcp_adapters.mcp_server.host import Host
from kbmcp_adapters.mcp_server.tools import log_not_served, printable
from kbmcp_core.errors import (
    IndexNotFound,
    InvalidQuery,
    InvalidRange,
    KbError,
    PathRefused,
    ReadBusy,
)
from kbmcp_core.offer import TopicSummary
from kbmcp_core.uris import (
    COLLECTION_DOC_URI_TEMPLATE,
    DOC_PREFIX,
    DOC_URI_TEMPLATE,
    topic_uri,
)

log = logging.getLogger(__name__)

#: MCP's "resource not found": anything not offered or refused by the guard chain.
RESOURCE_NOT_FOUND = -32002
_URI_SHOWN = 300


def topic_name(group: TopicSummary) -> str:
    return group.prefix or "(top level)"


def topic_resource(group: TopicSummary) -> types.Resource:
    count = group.count
    where = f"under {group.prefix}/" if group.prefix else "at the top level"
    noun = "document" if count == 1 else "documents"
    return types.Resource(
        uri=group.uri,
        name=topic_name(group),
        title=f"Topic: {topic_name(group)}",
        description=f"{count} {noun} {where}: a Markdown list linking each one ({DOC_PREFIX}...).",
        mime_type="text/markdown",
    )


async def list_resources(host: Host, ctx: Any, params: Any) -> types.ListResourcesResult:
    """One entry per topic group of each collection, sorted by URI (on a host of several,
    ``kb://topic/<collection>/<prefix>``, named by collection). No index yet: none of it."""

    def run() -> list[types.Resource]:
        out = []
        for name in host.names:
            rt, label = host.runtimes[name], host.label(name)
            try:
                groups = rt.open_index().topic_summaries()
            except IndexNotFound:
                if rt.indexing() is None:  # else serve's start run is building it (0024)
                    log.warning("resources/list: no index yet%s; run `kb-mcp index` to offer "
                                "documents", "" if label is None else f" in {label}")
                continue
            out += [topic_resource(g) if label is None else _labelled(g, label)
                    for g in groups]
        return sorted(out, key=lambda r: r.uri)

    try:
        listed = await host.in_thread(run)
    except Exception as exc:
        raise read_error(exc, "") from None
    return types.ListResourcesResult(resources=listed)


def _labelled(group: TopicSummary, label: str) -> types.Resource:
    resource = topic_resource(dataclasses.replace(group, uri=topic_uri(group.prefix, label)))
    return resource.model_copy(update={
        "name": f"{label}: {topic_name(group)}",
        "title": f"Topic: {topic_name(group)} ({label})",
        "description": f"Collection {label}. {resource.description}"})


async def list_templates(host: Host, ctx: Any,
                         params: Any) -> types.ListResourceTemplatesResult:
    """The document template: ``kb://doc/{path}``, or on a host of several
    ``kb://doc/{collection}/{path}``."""
    if not host.several:
        return types.ListResourceTemplatesResult(resource_templates=[types.ResourceTemplate(
            uri_template=DOC_URI_TEMPLATE,
            name="document",
            title="A document of the knowledge base",
            description=(
                "One indexed document by its path relative to the knowledge base, "
                "percent-encoded (search hits and topic listings carry ready-made URIs). "
                "Add #L40-58 to read lines 40 to 58 only (#L40: one line). A document "
                "over 1 MiB comes back as its first lines with a notice naming the URI "
                "of the next ones. Markdown comes back as text/markdown; text and text "
                "extracted from PDFs as text/plain."
            ),
        )])
    default = host.space.default
    short = (f" A URI without a collection reads the default collection ({default})."
             if default else "")
    return types.ListResourceTemplatesResult(resource_templates=[types.ResourceTemplate(
        uri_template=COLLECTION_DOC_URI_TEMPLATE,
        name="document",
        title="A document of one collection",
        description=(
            f"One indexed document of a collection ({', '.join(host.names)}) by its path "
            "relative to the collection's folder, percent-encoded (search hits and topic "
            "listings carry ready-made URIs). Add #L40-58 to read lines 40 to 58 only. A "
            "document over 1 MiB comes back as its first lines with a notice naming the URI "
            f"of the next ones.{short}"),
    )])


async def read_resource(
    host: Host, ctx: Any, params: types.ReadResourceRequestParams
) -> types.ReadResourceResult:
    """The collection the URI reads (``Host.route``), then that collection's own read:
    the guard chain of one folder, bound to that collection's folder."""
    uri = params.uri
    try:
        name, inner = host.route(uri)
        rt = host.runtimes[name]

        def run() -> types.ReadResourceResult:
            body = rt.open_index().read_resource(inner, collection=host.label(name))
            return types.ReadResourceResult(
                contents=[
                    types.TextResourceContents(uri=uri, mime_type=body.media_type,
                                               text=body.text)
                ]
            )

        return await rt.in_thread(run)
    except Exception as exc:
        raise read_error(exc, uri) from None


def read_error(exc: BaseException, uri: str) -> MCPError:
    """THE place a resource failure becomes a JSON-RPC error: -32002, -32602 or -32603.

    A line range the document does not have (``InvalidRange``, decision 0033) is
    "invalid params", with ``total_lines`` in its data.

    Refused or not offered (the guard chain, a race it lost, OfferRules, an unknown
    URI, no index yet) is "resource not found"; the reason never names a server path.
    Anything else is an internal error whose details stay in the server log.
    """
    shown = printable(uri[:_URI_SHOWN])
    if isinstance(exc, InvalidQuery):  # a line range the document does not have
        return MCPError(types.INVALID_PARAMS, f"Invalid params: {printable(exc.public_message)}",
                        {"uri": shown, "code": exc.code,
                         **({"total_lines": exc.total_lines}
                            if isinstance(exc, InvalidRange) and exc.total_lines is not None
                            else {})})
    if isinstance(exc, PathRefused):
        log_not_served(exc)
        return MCPError(
            RESOURCE_NOT_FOUND,
            "Resource not found",
            {"uri": shown, "reason": printable(exc.reason)},
        )
    if isinstance(exc, IndexNotFound):
        return MCPError(
            RESOURCE_NOT_FOUND,
            "Resource not found",
            {"uri": shown, "reason": "this knowledge base has no index yet; run `kb-mcp index`"},
        )
    if isinstance(exc, ReadBusy):  # every conversion slot stayed taken: try again shortly
        log.warning("resource read of %s refused: %s", shown, exc)
        return MCPError(types.INTERNAL_ERROR, f"Server busy: {printable(exc.public_message)}",
                        {"uri": shown, "code": exc.code})
    if isinstance(exc, KbError):  # a known failure (a store down...): one line, a trace at debug
        log.error("resource request failed for %s: %s", shown or "the listing", exc,
                  exc_info=log.isEnabledFor(logging.DEBUG))
    else:
        log.error("resource request failed for %s", shown or "the listing", exc_info=exc)
    return MCPError(types.INTERNAL_ERROR, "Internal error: see the kb-mcp server log")
