"""The ``kb://`` URI scheme: the one place its URIs are built and the one place they are parsed."""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import quote, unquote

from kbmcp_core.errors import InvalidRange, NotOffered, PathRefused
from kbmcp_core.reading import RequestPath, clean_request_path

SCHEME = "kb://"
DOC_PREFIX = SCHEME + "doc/"
TOPIC_PREFIX = SCHEME + "topic/"
#: The MCP resource template a client fills in to read one document.
DOC_URI_TEMPLATE = DOC_PREFIX + "{path}"
#: Characters left as they are in kb:// URIs; everything else is percent-encoded.
URI_SAFE = "-._~/"
#: The fragment that names a line range: ``#L40-58`` (or ``#L40`` for one line).
_RANGE_FRAGMENT = re.compile(r"L([1-9][0-9]{0,9})(?:-L?([1-9][0-9]{0,9}))?")
#: How much of a refused URI an error repeats.
_SHOWN = 200


@dataclass(frozen=True, slots=True)
class DocUri:
    """``kb://doc/<path>``: ``path`` has passed the path guard (``clean_request_path``)."""

    path: RequestPath


@dataclass(frozen=True, slots=True)
class DocRangeUri:
    """``kb://doc/<path>#L<start>-<end>``: lines ``start``..``end`` (1-based, inclusive)
    of the document at ``path``, which has passed the path guard."""

    path: RequestPath
    start_line: int
    end_line: int


@dataclass(frozen=True, slots=True)
class TopicUri:
    """``kb://topic/<prefix>``: ``prefix`` is the topic group (empty for the top level)."""

    prefix: str


def doc_uri(path: str) -> str:
    return DOC_PREFIX + quote(path, safe=URI_SAFE)


def doc_range_uri(path: str, start_line: int, end_line: int) -> str:
    """``kb://doc/<path>#L<start>-<end>``: a URI ``resources/read`` answers with exactly
    those lines (1-based, inclusive). A ``#`` in the path is percent-encoded, so the
    fragment is never ambiguous."""
    if start_line < 1 or end_line < start_line:
        raise ValueError(f"not a line range: {start_line}-{end_line}")
    return f"{doc_uri(path)}#L{start_line}-{end_line}"


def topic_uri(prefix: str) -> str:
    return TOPIC_PREFIX + quote(prefix, safe=URI_SAFE)


def parse_uri(uri: str) -> DocUri | DocRangeUri | TopicUri:
    """What ``uri`` names. Both kinds are percent-decoded strictly (malformed UTF-8 is
    ``PathRefused``); a document path then passes the path guard, once, here. A document
    URI with a ``#L<start>-<end>`` fragment names those lines; any other fragment is
    ``InvalidArgument``. Any other URI is ``NotOffered``."""
    if uri.startswith(TOPIC_PREFIX):
        return TopicUri(_decoded(uri, TOPIC_PREFIX).strip("/"))
    if uri.startswith(DOC_PREFIX):
        base, hashmark, fragment = uri.partition("#")
        path = clean_request_path(_decoded(base, DOC_PREFIX))
        if not hashmark:
            return DocUri(path)
        start, end = _line_range(fragment, uri)
        return DocRangeUri(path, start, end)
    raise NotOffered(uri[:_SHOWN], "unknown resource URI")


def _line_range(fragment: str, uri: str) -> tuple[int, int]:
    match = _RANGE_FRAGMENT.fullmatch(fragment)
    if match is None:
        raise InvalidRange(f"{uri[:_SHOWN]!r}: a document URI's fragment names lines, "
                              "as in #L40-58 or #L40")
    start = int(match.group(1))
    end = int(match.group(2)) if match.group(2) else start
    if end < start:
        raise InvalidRange(f"{uri[:_SHOWN]!r}: the range ends (line {end}) before it "
                              f"starts (line {start})")
    return start, end


def _decoded(uri: str, prefix: str) -> str:
    try:
        return unquote(uri.removeprefix(prefix), errors="strict")
    except UnicodeDecodeError:
        raise PathRefused(uri[:_SHOWN], "malformed percent-encoding") from None
