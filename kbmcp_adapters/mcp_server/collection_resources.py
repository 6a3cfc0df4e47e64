"""Resources and completion on a server of several collections (decision 0042): every
collection's topic groups in ``resources/list``, the ``kb://doc/{collection}/{path}``
template, reads routed by ``uris.collection_of`` to the collection's own guarded read,
and completion of collection names and of the paths one collection offers."""

from __future__ import annotations

import dataclasses
from typing import Any

import mcp_types as types
from mcp.shared.exceptions import MCPError

from kbmcp_adapters.mcp_server.completion import MAX_TYPED_CHARS, NOTHING, matching
from kbmcp_adapters.mcp_server.host import Host
from kbmcp_adapters.mcp_server.prompts import PROMPTS
from kbmcp_adapters.mcp_server.resources import read_error, topic_name, topic_resource
from kbmcp_core.errors import IndexNotFound
from kbmcp_core.uris import COLLECTION_DOC_URI_TEMPLATE, DOC_URI_TEMPLATE, collection_of, topic_uri


async def list_resources(rs: Host, ctx: Any, params: Any) -> types.ListResourcesResult:
    """Each collection's topic groups (``kb://topic/<collection>/<prefix>``), by URI."""

    def run() -> list[types.Resource]:
        out = []
        for name in rs.names:
            try:
                groups = rs.runtimes[name].open_index().topic_summaries()
            except IndexNotFound:  # no index yet in this collection: nothing of it listed
                continue
            for group in groups:
                resource = topic_resource(dataclasses.replace(
                    group, uri=topic_uri(group.prefix, name)))
                out.append(resource.model_copy(update={
                    "name": f"{name}: {topic_name(group)}",
                    "title": f"Topic: {topic_name(group)} ({name})",
                    "description": f"Collection {name}. {resource.description}"}))
        return sorted(out, key=lambda r: r.uri)

    try:
        listed = await rs.in_thread(run)
    except Exception as exc:
        raise read_error(exc, "") from None
    return types.ListResourcesResult(resources=listed)


async def list_templates(rs: Host, ctx: Any,
                         params: Any) -> types.ListResourceTemplatesResult:
    default = rs.space.default
    short = (f" A URI without a collection reads the default collection ({default})."
             if default else "")
    return types.ListResourceTemplatesResult(resource_templates=[types.ResourceTemplate(
        uri_template=COLLECTION_DOC_URI_TEMPLATE,
        name="document",
        title="A document of one collection",
        description=(
            f"One indexed document of a collection ({', '.join(rs.names)}) by its path "
            "relative to the collection's folder, percent-encoded (search hits and topic "
            "listings carry ready-made URIs). Add #L40-58 to read lines 40 to 58 only. A "
            f"document over 1 MiB comes back as its first lines with a notice naming the URI "
            f"of the next ones.{short}"),
    )])


async def read_resource(rs: Host, ctx: Any,
                        params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
    """The collection the URI names (``collection_of``), then that collection's own read:
    the same guard chain as one folder's, bound to that collection's folder."""
    uri = params.uri
    try:
        name, inner = collection_of(uri, rs.space)
        rt = rs.runtimes[name]

        def run() -> types.ReadResourceResult:
            body = rt.open_index().read_resource(inner, collection=name)
            return types.ReadResourceResult(contents=[types.TextResourceContents(
                uri=uri, mime_type=body.media_type, text=body.text)])

        return await rt.in_thread(run)
    except Exception as exc:
        raise read_error(exc, uri) from None


async def complete(rs: Host, ctx: Any,
                   params: types.CompleteRequestParams) -> types.CompleteResult:
    """``collection`` of the template: the collection names; ``path``: what the
    collection already chosen (``context.arguments``, else the one default) offers;
    a prompt's ``topic``: the topic groups of the default collections."""
    ref, argument = params.ref, params.argument
    typed = argument.value
    chosen = (params.context.arguments or {}) if params.context is not None else {}
    if isinstance(ref, types.PromptReference):
        if ref.name not in PROMPTS:
            raise MCPError(types.INVALID_PARAMS, f"unknown prompt {ref.name[:64]!r}; the "
                           f"prompts are {', '.join(PROMPTS)}")
        wants = "topic" if (ref.name, argument.name) == ("summarize_topic", "topic") else None
    else:
        if ref.uri not in (COLLECTION_DOC_URI_TEMPLATE, DOC_URI_TEMPLATE):
            raise MCPError(types.INVALID_PARAMS, f"unknown resource template "
                           f"{ref.uri[:200]!r}; the template is {COLLECTION_DOC_URI_TEMPLATE}")
        wants = argument.name if argument.name in ("collection", "path") else None
    if wants is None or len(typed) > MAX_TYPED_CHARS:
        return types.CompleteResult(completion=NOTHING)
    if wants == "collection":
        return types.CompleteResult(completion=matching(rs.names, typed, fold_case=True))
    name = chosen.get("collection")
    if wants == "path" and name not in rs.names:
        name = rs.space.default
        if name is None:
            return types.CompleteResult(completion=NOTHING)

    def run() -> types.Completion:
        if wants == "topic":
            names: dict[str, None] = {}
            for each in rs.collections.defaults:
                try:
                    groups = rs.runtimes[each].open_index().topic_summaries()
                except IndexNotFound:
                    continue
                names.update(dict.fromkeys(g.prefix for g in groups if g.prefix))
            return matching(names, typed, fold_case=True)
        assert name is not None
        try:
            return matching(rs.runtimes[name].open_index().offered_paths(), typed,
                            fold_case=False)
        except IndexNotFound:
            return NOTHING

    try:
        return types.CompleteResult(completion=await rs.in_thread(run))
    except Exception as exc:
        raise read_error(exc, "") from None


__all__ = ["complete", "list_resources", "list_templates", "read_resource"]
