"""The ``kb://`` URI scheme: the one place its URIs are built and the one place they are parsed.

A server of one folder speaks ``kb://doc/<path>`` and ``kb://topic/<prefix>``. A server of
several collections (decision 0042) puts the collection first: ``kb://doc/<collection>/<path>``
and ``kb://topic/<collection>/<prefix>``, and reads a URI by one rule (``collection_of``):
a first segment that is one of its collection names names that collection; any other URI
belongs to the one default collection when there is exactly one, and is refused, naming
the form, when there is not.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from urllib.parse import quote, unquote

from kbmcp_core.errors import InvalidRange, NotOffered, PathRefused
from kbmcp_core.reading import RequestPath, clean_request_path

SCHEME = "kb://"
DOC_PREFIX = SCHEME + "doc/"
TOPIC_PREFIX = SCHEME + "topic/"
#: The MCP resource template a client fills in to read one document.
DOC_URI_TEMPLATE = DOC_PREFIX + "{path}"
#: The template of a server of several collections.
COLLECTION_DOC_URI_TEMPLATE = DOC_PREFIX + "{collection}/{path}"
#: Characters left as they are in kb:// URIs; everything else is percent-encoded.
URI_SAFE = "-._~/"
#: The fragment that names a line range: ``#L40-58`` (or ``#L40`` for one line).
_RANGE_FRAGMENT = re.compile(r"L([1-9][0-9]{0,9})(?:-L?([1-9][0-9]{0,9}))?")
#: How much of a refused URI an error repeats.
_SHOWN = 200


@dataclass(frozen=True, slots=True)
class DocUri:
    """``kb://doc/<path>``: ``path`` has passed the path guard (``clean_request_path``);
    ``collection`` is the collection it names (None on a server of one folder)."""

    path: RequestPath
    collection: str | None = None


@dataclass(frozen=True, slots=True)
class DocRangeUri:
    """``kb://doc/<path>#L<start>-<end>``: lines ``start``..``end`` (1-based, inclusive)
    of the document at ``path``, which has passed the path guard."""

    path: RequestPath
    start_line: int
    end_line: int
    collection: str | None = None


@dataclass(frozen=True, slots=True)
class TopicUri:
    """``kb://topic/<prefix>``: ``prefix`` is the topic group (empty for the top level)."""

    prefix: str
    collection: str | None = None


@dataclass(frozen=True, slots=True)
class UriSpace:
    """The collections a server's URIs may name: ``names`` (every collection) and
    ``default``, the collection a URI naming none belongs to (None unless exactly one
    collection is searched by default)."""

    names: tuple[str, ...]
    default: str | None = None

    @classmethod
    def of(cls, names: Sequence[str], defaults: Sequence[str]) -> UriSpace:
        return cls(tuple(names), defaults[0] if len(defaults) == 1 else None)


def _in(collection: str | None) -> str:
    return "" if collection is None else quote(collection, safe="") + "/"


def doc_uri(path: str, collection: str | None = None) -> str:
    """``kb://doc/<path>``, or ``kb://doc/<collection>/<path>`` when ``collection`` is given."""
    return DOC_PREFIX + _in(collection) + quote(path, safe=URI_SAFE)


def doc_range_uri(path: str, start_line: int, end_line: int,
                  collection: str | None = None) -> str:
    """``kb://doc/<path>#L<start>-<end>``: a URI ``resources/read`` answers with exactly
    those lines (1-based, inclusive). A ``#`` in the path is percent-encoded, so the
    fragment is never ambiguous."""
    if start_line < 1 or end_line < start_line:
        raise ValueError(f"not a line range: {start_line}-{end_line}")
    return f"{doc_uri(path, collection)}#L{start_line}-{end_line}"


def topic_uri(prefix: str, collection: str | None = None) -> str:
    return TOPIC_PREFIX + _in(collection) + quote(prefix, safe=URI_SAFE)


def collection_of(uri: str, space: UriSpace) -> tuple[str, str]:
    """The collection ``uri`` names on a server of several collections, and the URI
    inside that collection (its single-folder form, as the collection's own knowledge
    base reads it). The rule: a first segment (percent-decoded) that is one of
    ``space.names`` names that collection and is taken off; otherwise the URI belongs to
    ``space.default``, whole; with no default it is ``NotOffered``, naming the form."""
    for prefix in (DOC_PREFIX, TOPIC_PREFIX):
        if not uri.startswith(prefix):
            continue
        head, _slash, rest = uri[len(prefix):].partition("/")
        if _decoded(head, "") in space.names:
            return _decoded(head, ""), prefix + rest
        if space.default is not None:
            return space.default, uri
        raise NotOffered(uri[:_SHOWN], f"this server serves several collections, so a "
                         f"URI names one first: {prefix}{{collection}}/...; the "
                         f"collections are {', '.join(space.names)}")
    raise NotOffered(uri[:_SHOWN], "unknown resource URI")


def parse_uri(uri: str, space: UriSpace | None = None) -> DocUri | DocRangeUri | TopicUri:
    """What ``uri`` names. Both kinds are percent-decoded strictly (malformed UTF-8 is
    ``PathRefused``); a document path then passes the path guard, once, here. A document
    URI with a ``#L<start>-<end>`` fragment names those lines; any other fragment is
    ``InvalidArgument``. Any other URI is ``NotOffered``. With ``space`` (a server of
    several collections) the collection is found first (``collection_of``)."""
    if space is not None:
        name, inner = collection_of(uri, space)
        return replace(parse_uri(inner), collection=name)
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
