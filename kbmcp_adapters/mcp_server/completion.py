"""``completion/complete``: the ``topic`` argument of the ``summarize_topic`` prompt and
the ``path`` of the ``kb://doc/{path}`` template, completed from what the index offers."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import mcp_types as types
from mcp.shared.exceptions import MCPError

from kbmcp_adapters.mcp_server.prompts import PROMPTS
from kbmcp_adapters.mcp_server.resources import read_error
from kbmcp_adapters.mcp_server.runtime import KbRuntime
from kbmcp_core.errors import IndexNotFound
from kbmcp_core.uris import DOC_URI_TEMPLATE

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
    rt: KbRuntime, ctx: Any, params: types.CompleteRequestParams
) -> types.CompleteResult:
    """Offered documents only: a file the index does not offer (not indexed, format off,
    past its read cap) never completes. No index yet: no values, not an error. An
    unknown prompt or resource template is INVALID_PARAMS; an argument with nothing to
    offer (a question, a date) gets no values."""
    ref, argument = params.ref, params.argument
    typed = argument.value
    if isinstance(ref, types.PromptReference):
        if ref.name not in PROMPTS:
            raise MCPError(types.INVALID_PARAMS,
                           f"unknown prompt {ref.name[:64]!r}; the prompts are "
                           f"{', '.join(PROMPTS)}")
        wants = "topic" if (ref.name, argument.name) == ("summarize_topic", "topic") else None
    else:
        if ref.uri != DOC_URI_TEMPLATE:
            raise MCPError(types.INVALID_PARAMS,
                           f"unknown resource template {ref.uri[:200]!r}; the template is "
                           f"{DOC_URI_TEMPLATE}")
        wants = "path" if argument.name == "path" else None
    if wants is None or len(typed) > MAX_TYPED_CHARS:
        return types.CompleteResult(completion=NOTHING)

    def run() -> types.Completion:
        try:
            kb = rt.open_index()
            if wants == "topic":
                names = [g.prefix for g in kb.topic_summaries() if g.prefix]
                return matching(names, typed, fold_case=True)
            return matching(kb.offered_paths(), typed, fold_case=False)
        except IndexNotFound:  # no index yet (or serve's start run still building it)
            return NOTHING

    try:
        return types.CompleteResult(completion=await rt.in_thread(run))
    except Exception as exc:  # a store down: an internal error, the details in the log
        raise read_error(exc, "") from None


__all__ = ["MAX_VALUES", "complete", "matching"]
