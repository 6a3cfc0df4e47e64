"""Search hits as MCP ``resource_link`` content blocks: one per readable hit, beside the
structured result, naming the lines that answer (``kb://doc/<path>#L<a>-<b>``: the hit's
``answer_lines``, else all the lines it cites; decision 0056)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import mcp_types as types

from kbmcp_core.answer_lines import lines_of
from kbmcp_core.models import extension_of
from kbmcp_core.reading import media_type_for
from kbmcp_core.uris import doc_range_uri, doc_uri


def hit_links(data: Mapping[str, Any]) -> list[types.ContentBlock]:
    """One ``resource_link`` per hit of a search result that a client can read.

    A hit without a ``uri`` (its document is not offered as a resource) gets none. A hit
    citing lines links to exactly those lines, and ``size`` is the UTF-8 length of the
    passage as the index holds it; a hit citing a page alone (a PDF) links to the whole
    document, whose extracted size the index does not know, so ``size`` is left out.
    """
    hits: Sequence[Mapping[str, Any]] = data.get("results") or ()
    return [link for hit in hits if (link := hit_link(hit)) is not None]


def hit_link(hit: Mapping[str, Any]) -> types.ResourceLink | None:
    uri, path = hit.get("uri"), hit.get("path")
    if not isinstance(uri, str) or not isinstance(path, str):
        return None
    start, end = hit.get("start_line"), hit.get("end_line")
    title = str(hit.get("title") or path)
    heading = hit.get("heading")
    if heading and heading != title:
        title = f"{title} — {heading}"
    size: int | None = None
    collection = hit.get("collection")  # in the URI on a server of several (decision 0042)
    if not isinstance(collection, str) or uri != doc_uri(path, collection):
        collection = None
    if isinstance(start, int) and isinstance(end, int) and 1 <= start <= end:
        content = str(hit.get("content", ""))
        first, last = _answer(hit, start, end)
        uri = doc_range_uri(path, first, last, collection)
        where = f"lines {first}-{last}" if last > first else f"line {first}"
        if (first, last) != (start, end):
            where += f" (the answer; the hit cites lines {start}-{end})"
            content = lines_of(content, end, first, last)
        size = len(content.encode("utf-8", "surrogatepass"))
    elif isinstance(hit.get("page"), int):
        where = f"page {hit['page']} (the link reads the whole document)"
    else:
        where = "the whole document"
    return types.ResourceLink(
        name=path,
        title=title,
        uri=uri,
        description=f"{path}, {where}: the passage this search hit cites",
        mime_type=media_type_for(extension_of(path)),
        size=size,
    )


def _answer(hit: Mapping[str, Any], start: int, end: int) -> tuple[int, int]:
    """The hit's ``answer_lines`` when it has them inside its own range, else its range."""
    span = hit.get("answer_lines")
    if (isinstance(span, list | tuple) and len(span) == 2
            and all(isinstance(n, int) for n in span) and start <= span[0] <= span[1] <= end):
        return span[0], span[1]
    return start, end


__all__ = ["hit_link", "hit_links"]
