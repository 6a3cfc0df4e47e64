"""``completion/complete``: the ``topic`` argument of the ``summarize_topic`` prompt and
the ``path`` (and, on a host of several, ``collection``) of the document template,
completed from what the host's indexes offer."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import mcp_types as types
from mcp.shared.exceptions import MCPError

from kbmcp_adapters.mcp_server.host import Host
from kbmcp_adapters.mcp_server.prompts import PROMPTS
from kbmcp_adapters.mcp_server.resources import read_error
from kbmcp_core.errors import IndexNotFound
from kbmcp_core.uris import COLLECTION_DOC_URI_TEMPLATE, DOC_URI_TEMPLATE

#: The most values one completion carries (MCP's limit); ``total`` and ``hasMore`` say
#: how many more matched.
MAX_VALUES = 100
#: The longest typed value completed; a longer one matches nothing (no path is that long).
MAX_TYPED_CHARS = 4096


def matching(candidates: Iterable[str], typed: str, *, fold_case: bool) -> types.Completion:
    """The candidates that start with ``typed``, in order, at most ``MAX_VALUES``."""
    if fold_case:
        wanted = typed.casefold()
        found = [c for c in candidates if c.casefold().startswith(wanted)]
    else:
        found = [c for c in candidates if c.startswith(typed)]
    return types.Completion(values=found[:MAX_VALUES], total=len(found),
                            has_more=len(found) > MAX_VALUES)


NOTHING = types.Completion(values=[], total=0, has_more=False)


async def complete(
    host: Host, ctx: Any, params: types.CompleteRequestParams
) -> types.CompleteResult:
    """Offered documents only: a file the index does not offer (not indexed, format off,
    past its read cap) never completes. No index yet: no values, not an error. An
    unknown prompt or resource template is INVALID_PARAMS; an argument with nothing to
    offer (a question, a date) gets no values. On a host of several, the template's
    ``collection`` completes to the collection names and ``path`` to what the collection
    already chosen (``context.arguments``, else the one default) offers; a prompt's
    ``topic``, to the topic groups of the default collections."""
    ref, argument = params.ref, params.argument
    typed = argument.value
    templates = ((COLLECTION_DOC_URI_TEMPLATE, DOC_URI_TEMPLATE) if host.several
                 else (DOC_URI_TEMPLATE,))
    if isinstance(ref, types.PromptReference):
        if ref.name not in PROMPTS:
            raise MCPError(types.INVALID_PARAMS,
                           f"unknown prompt {ref.name[:64]!r}; the prompts are "
                           f"{', '.join(PROMPTS)}")
        wants = "topic" if (ref.name, argument.name) == ("summarize_topic", "topic") else None
    else:
        if ref.uri not in templates:
            raise MCPError(types.INVALID_PARAMS,
                           f"unknown resource template {ref.uri[:200]!r}; the template is "
                           f"{templates[0]}")
        wants = argument.name if argument.name in ("collection", "path") else None
    if wants is None or len(typed) > MAX_TYPED_CHARS:
        return types.CompleteResult(completion=NOTHING)
    if wants == "collection":  # a host of one has no such argument: nothing to offer
        names = host.names if host.several else ()
        return types.CompleteResult(completion=matching(names, typed, fold_case=True))
    chosen = (params.context.arguments or {}) if params.context is not None else {}
    name = chosen.get("collection")
    if name not in host.names or not host.several:
        name = host.space.default
    if name is None and wants == "path":
        return types.CompleteResult(completion=NOTHING)

    def run() -> types.Completion:
        if wants == "topic":
            topics: dict[str, None] = {}
            for each in host.collections.defaults:
                try:
                    groups = host.runtimes[each].open_index().topic_summaries()
                except IndexNotFound:  # no index yet (or serve's start run building it)
                    continue
                topics.update(dict.fromkeys(g.prefix for g in groups if g.prefix))
            return matching(topics, typed, fold_case=True)
        assert name is not None
        try:
            return matching(host.runtimes[name].open_index().offered_paths(), typed,
                            fold_case=False)
        except IndexNotFound:
            return NOTHING

    try:
        return types.CompleteResult(completion=await host.in_thread(run))
    except Exception as exc:  # a store down: an internal error, the details in the log
        raise read_error(exc, "") from None


__all__ = ["MAX_VALUES", "complete", "matching"]
