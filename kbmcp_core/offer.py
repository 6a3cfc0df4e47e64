"""What the index offers and how a client reads it: OfferRules (the one predicate), topic
groups, and the resource read (``read_resource``: URI, offer check, guarded load, body)."""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable
from dataclasses import dataclass

from kbmcp_core.errors import NotOffered
from kbmcp_core.models import StoredDocument, extension_of
from kbmcp_core.ports import ConvertedTexts, DocumentCatalog, FileSystem, ParserRegistry
from kbmcp_core.ranges import RangeRequest, read_range, resource_text
from kbmcp_core.reading import (
    RANGED_READ_CAP,
    ConversionGate,
    readable_bytes_for,
)
from kbmcp_core.uris import DocRangeUri, TopicUri, doc_uri, parse_uri, topic_uri

log = logging.getLogger(__name__)


def topic_of(path: str) -> str:
    """The group a document is listed under: its first one or two directory names.

    Documents at the root form the group with the empty prefix.
    """
    dirs = path.split("/")[:-1]
    return "/".join(dirs[:2])


class OfferRules:
    """Offered = indexed AND extension registered AND recorded size within what a read of
    it accepts (``readable_bytes_for``: a document past the 1 MiB read cap is read in
    ranges, so only one past the index cap is refused; decision 0033).

    A NULL size (never recorded) is offered. The size lookup asks the store only for rows
    past the smallest such cap, so a corpus with no huge document pays nothing. A store
    that fails (a server down) raises its ``StoreError``: a failure is never reported as
    "not offered".
    """

    def __init__(self, store: DocumentCatalog, registry: ParserRegistry) -> None:
        self.store = store
        self.registry = registry

    def _refused_by_size(self) -> set[str]:
        rows = self.store.sizes_over(RANGED_READ_CAP)
        return {p for p, size in rows if size > readable_bytes_for(extension_of(p))}

    def offered(self, paths: Iterable[str]) -> set[str]:
        """The subset of ``paths`` (taken as indexed) that is offered."""
        too_big = self._refused_by_size()
        exts = self.registry.extensions()
        return {p for p in paths if extension_of(p) in exts and p not in too_big}

    def offered_paths(self) -> list[str]:
        return sorted(self.offered(self.store.document_paths()))

    def is_offered(self, path: str) -> bool:
        if self.store.get_document(path) is None:
            return False
        return path in self.offered([path])


@dataclass(frozen=True, slots=True)
class TopicGroup:
    prefix: str
    uri: str
    documents: tuple[StoredDocument, ...]


@dataclass(frozen=True, slots=True)
class TopicSummary:
    """A topic group as listed: its size and its first few documents, from paths alone."""

    prefix: str
    uri: str
    count: int
    first_paths: tuple[str, ...]


def topic_summaries(rules: OfferRules, samples: int = 3) -> list[TopicSummary]:
    """Offered documents counted per topic group, without loading any document row, so
    the listing stays cheap at tens of thousands of documents."""
    groups: dict[str, list[str]] = {}
    for path in rules.offered_paths():
        groups.setdefault(topic_of(path), []).append(path)
    return [
        TopicSummary(prefix, topic_uri(prefix), len(paths), tuple(paths[:samples]))
        for prefix, paths in sorted(groups.items())
    ]


def topic_group(rules: OfferRules, prefix: str) -> TopicGroup | None:
    """One group with its documents (for its body), or None when nothing is offered."""
    paths = [p for p in rules.offered_paths() if topic_of(p) == prefix]
    if not paths:
        return None
    return TopicGroup(prefix, topic_uri(prefix), tuple(rules.store.documents(paths)))


def topic_groups(rules: OfferRules) -> list[TopicGroup]:
    """Offered documents grouped by topic prefix, sorted by prefix then path."""
    docs = rules.store.documents()
    offered = rules.offered(d.path for d in docs)
    groups: dict[str, list[StoredDocument]] = {}
    for d in docs:
        if d.path in offered:
            groups.setdefault(topic_of(d.path), []).append(d)
    return [
        TopicGroup(prefix, topic_uri(prefix), tuple(sorted(items, key=lambda d: d.path)))
        for prefix, items in sorted(groups.items())
    ]


def topic_body(group: TopicGroup, collection: str | None = None) -> str:
    """Markdown list of a group's offered documents with their URIs (in ``collection``'s
    form on a server of several collections).

    Titles come from the documents (front matter, file names): they are text, never
    Markdown, so each is flattened to one line and escaped before it is pasted in.
    """
    title = markdown_text(group.prefix) if group.prefix else "(top level)"
    n = len(group.documents)
    lines = [f"# {title}", "", f"{n} document{'s' if n != 1 else ''}.", ""]
    for d in group.documents:
        label = markdown_text(d.title) or markdown_text(d.path)
        lines.append(f"- [{label}]({doc_uri(d.path, collection)}) — {code_span(d.path)}")
    return "\n".join(lines) + "\n"


@dataclass(frozen=True, slots=True)
class ResourceBody:
    """What a ``kb://`` read answers: the body and its media type."""

    uri: str
    text: str
    media_type: str


def read_resource(uri: str, rules: OfferRules, fs: FileSystem,
                  conversions: ConvertedTexts | None = None,
                  gate: ConversionGate | None = None, *,
                  collection: str | None = None) -> ResourceBody:
    """THE resource read: ``kb://topic/<prefix>`` (a group's list), ``kb://doc/<path>`` or
    ``kb://doc/<path>#L<a>-<b>`` (those lines).

    1. ``uris.parse_uri``: strict percent-decoding, the path guard (once).
    2. ``rules``: only an offered document, or a topic with one, is read (``NotOffered``).
    3. ``ranges.read_range`` (``reading.load_clean`` with ``rules.registry``: the
       root-bound open, the format and size checks, the kept or gated conversion), then
       the lines asked for; a whole read of a document past the read cap serves its first
       lines.
    4. ``ranges.resource_text``: the text, plus a visible notice when it is not all of it.

    ``uri`` is in its single-folder form; ``collection`` (a server of several, which took
    it off the URI: ``uris.collection_of``) puts the URIs a body names in its form.
    """
    target = parse_uri(uri)
    if isinstance(target, TopicUri):
        group = topic_group(rules, target.prefix)
        if group is None:
            raise NotOffered(target.prefix, "no such topic")
        return ResourceBody(uri, topic_body(group, collection), "text/markdown")
    if not rules.is_offered(target.path):
        raise NotOffered(target.path, "not offered by this knowledge base")
    if isinstance(target, DocRangeUri):
        ask = RangeRequest(start_line=target.start_line,
                           max_lines=target.end_line - target.start_line + 1,
                           outline_unasked=False)
    else:
        ask = RangeRequest(whole_or_first=True, outline_unasked=False)
    got = read_range(target.path, ask, fs, rules.registry, conversions, gate)
    return ResourceBody(uri, resource_text(got, collection=collection), got.media_type)


_LINE_BREAKS = re.compile(r"[\x00-\x1f\x7f\u0085\u2028\u2029]+")
_MARKDOWN_PUNCTUATION = re.compile(r"([\\`*_\[\]()<>#!~&])")


def _one_line(text: str) -> str:
    return " ".join(_LINE_BREAKS.sub(" ", text).split())


def markdown_text(text: str) -> str:
    """``text`` as literal Markdown inline text: one line, every punctuation mark that
    could open a link, emphasis, HTML or a heading escaped with a backslash."""
    return _MARKDOWN_PUNCTUATION.sub(r"\\\1", _one_line(text))


def code_span(text: str) -> str:
    """``text`` as one Markdown code span, fenced by more backticks than it holds."""
    flat = _one_line(text)
    longest = max((len(run) for run in re.findall(r"`+", flat)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if flat.startswith("`") or flat.endswith("`") else ""
    return f"{fence}{pad}{flat}{pad}{fence}"
