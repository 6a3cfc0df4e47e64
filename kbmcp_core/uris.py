"""The ``kb://`` URI scheme: the one place its URIs are built and the one place they are parsed."""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import quote, unquote

from kbmcp_core.errors import NotOffered, PathRefused
from kbmcp_core.reading import RequestPath, clean_request_path

SCHEME = "kb://"
DOC_PREFIX = SCHEME + "doc/"
TOPIC_PREFIX = SCHEME + "topic/"
#: The MCP resource template a client fills in to read one document.
DOC_URI_TEMPLATE = DOC_PREFIX + "{path}"
#: Characters left as they are in kb:// URIs; everything else is percent-encoded.
URI_SAFE = "-._~/"
#: How much of a refused URI an error repeats.
_SHOWN = 200


@dataclass(frozen=True, slots=True)
class DocUri:
    """``kb://doc/<path>``: ``path`` has passed the path guard (``clean_request_path``)."""

    path: RequestPath


@dataclass(frozen=True, slots=True)
class TopicUri:
    """``kb://topic/<prefix>``: ``prefix`` is the topic group (empty for the top level)."""

    prefix: str


def doc_uri(path: str) -> str:
    return DOC_PREFIX + quote(path, safe=URI_SAFE)


def topic_uri(prefix: str) -> str:
    return TOPIC_PREFIX + quote(prefix, safe=URI_SAFE)


def parse_uri(uri: str) -> DocUri | TopicUri:
    """What ``uri`` names. Both kinds are percent-decoded strictly (malformed UTF-8 is
    ``PathRefused``); a document path then passes the path guard, once, here. Any other
    URI is ``NotOffered``."""
    if uri.startswith(TOPIC_PREFIX):
        return TopicUri(_decoded(uri, TOPIC_PREFIX).strip("/"))
    if uri.startswith(DOC_PREFIX):
        return DocUri(clean_request_path(_decoded(uri, DOC_PREFIX)))
    raise NotOffered(uri[:_SHOWN], "unknown resource URI")


def _decoded(uri: str, prefix: str) -> str:
    try:
        return unquote(uri.removeprefix(prefix), errors="strict")
    except UnicodeDecodeError:
        raise PathRefused(uri[:_SHOWN], "malformed percent-encoding") from None
