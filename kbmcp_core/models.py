"""Core value types: frozen dataclasses shared by every use-case and port."""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from kbmcp_core.field_filters import FieldCondition
from kbmcp_core.fields import FieldValue

Vector = list[float]

KIB = 1024
MIB = 1024 * KIB

#: Files larger than this are never read for indexing (checked with stat first).
INDEX_CAP_BYTES = 50 * MIB

#: A calendar date as every surface accepts it (search filters, prompt arguments, the
#: tool schemas): YYYY-MM-DD. Whether it is a real date is checked separately.
DATE_PATTERN = r"^\d{4}-\d{2}-\d{2}$"

# Why the walk did not take a path: the keys of ``RunSummary.skipped_reasons``.
#: quiet skips, counted only (a folder of photos must not print a line per photo)
SKIP_FORMAT = "format not enabled"  # one kb-mcp reads, left out by [parsers].enabled
SKIP_UNSUPPORTED = "not a supported format"  # one kb-mcp cannot read (photo.png)
SKIP_IGNORED = "excluded by .kb-mcpignore"
SKIP_EXCLUDED_FOLDER = "excluded folder"
SKIP_INDEX_FOLDER = "a kb-mcp index folder"  # another index than this one's (an old one)
#: refusals, each with its own warning line as well
SKIP_LINK = "symbolic link"
SKIP_HARD_LINK = "more than one hard link"
SKIP_SPECIAL = "not a regular file"
SKIP_BAD_NAME = "name not valid UTF-8"
SKIP_UNREADABLE = "unreadable"
SKIP_OVERSIZE = "over the 50 MiB index cap"
SKIP_NO_TEXT = "no text to index"
# Why a file failed: the keys of ``RunSummary.failed_reasons``. A walk refusal of kind
# "failed" (``SKIP_UNREADABLE``: a file or folder that could not be read or listed) counts
# under its category; a file its parser refused or could not read, under this one.
FAIL_PARSE = "could not be read as its format"


@dataclass(frozen=True, slots=True)
class ChunkDraft:
    """One chunk produced by a parser, before it has an id or a vector."""

    ordinal: int
    heading: str
    heading_path: tuple[str, ...]
    content: str
    start_line: int | None = None
    end_line: int | None = None
    page: int | None = None

    @property
    def whole_text(self) -> str:
        """Heading path plus the whole body (``whole_text_of``): what the chunk's size is
        measured on and what its ``ChunkRecord.text_hash`` covers. The model reads less of
        it (``vector_text_of``, decision 0020).

        The document title is deliberately left out so that a frontmatter-only edit
        (a new title, tags, date) changes neither the hash nor the vector.
        """
        return whole_text_of(self.heading_path, self.content)


@dataclass(frozen=True, slots=True)
class ParsedDocument:
    """What a parser extracted from the bytes of one file."""

    title: str
    chunks: tuple[ChunkDraft, ...]
    date: str | None = None
    tags: tuple[str, ...] = ()
    topic: str | None = None
    category: str | None = None
    metadata: Mapping[str, object] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()
    #: the text a read serves (``Parser.extract_text``), when the parser made it on the
    #: way: the converted formats do, and the index keeps it for reads (decision 0023)
    text: str | None = None


@dataclass(frozen=True, slots=True)
class DiskFile:
    """A regular file found by the walk: relative POSIX path, size and content hash.

    ``content_hash`` is None when the file was refused for exceeding the index cap
    (``oversize``: it is never read then, only stat'ed), and when the index run's plan did
    not need it (``ports.HashNeeded``): such a file is indexed whatever its bytes, and
    the run's read of it is its only one.
    """

    path: str
    size: int
    content_hash: str | None
    oversize: bool = False


@dataclass(frozen=True, slots=True)
class Refusal:
    """A path the walk or a read refused, with a one-line human reason."""

    path: str
    reason: str
    #: "absent" refusals (symlinks, hard links, special files) mean "not a document":
    #: any previous row for the path is removed. "failed" ones keep the previous row.
    kind: Literal["absent", "failed"] = "failed"
    #: the short reason it is counted under in ``RunSummary.skipped_reasons``
    category: str = SKIP_UNREADABLE


@dataclass(frozen=True, slots=True)
class DiskScan:
    files: Mapping[str, DiskFile]
    refused: tuple[Refusal, ...] = ()
    #: paths the walk met and quietly did not take, counted per reason (``SKIP_*``)
    skipped: Mapping[str, int] = field(default_factory=dict)
    #: the paths behind ``skipped``, per reason (a scanner may leave them out)
    skipped_paths: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    def entries(self) -> int:
        """Every path the walk met and accounted for: the files it took, each path it
        refused (a file, a link, a folder it could not list) and each it skipped (a file
        of a disabled format, an excluded file or folder)."""
        return len(self.files) + len(self.refused) + sum(self.skipped.values())


@dataclass(frozen=True, slots=True)
class IndexedState:
    """What the index remembers about one document, as the planner needs it."""

    path: str
    content_hash: str
    size_bytes: int | None


@dataclass(frozen=True, slots=True)
class DocumentRecord:
    """A document row as written to the index store."""

    path: str
    title: str
    content_hash: str
    size_bytes: int
    date: str | None
    topic: str | None
    category: str | None
    tags: tuple[str, ...]
    metadata: Mapping[str, object]
    last_indexed: str
    #: the rows of the ``[fields]`` the knowledge base declares (``fields.values_of``)
    fields: tuple[FieldValue, ...] = ()


@dataclass(frozen=True, slots=True)
class ChunkRecord:
    """A chunk row: a draft with its id and ``text_hash``, the sha256 of its whole text
    (``whole_text_of``: heading trail + body), not of what the model reads
    (``vector_text_of``) and not of the file's bytes (``DocumentRecord.content_hash``). The
    store keeps it in the ``chunks.content_hash`` column."""

    id: int
    ordinal: int
    heading: str
    heading_path: tuple[str, ...]
    content: str
    text_hash: str
    start_line: int | None
    end_line: int | None
    page: int | None


@dataclass(frozen=True, slots=True)
class StoredDocument:
    """A document row read back from the index store."""

    id: int
    path: str
    title: str
    content_hash: str
    size_bytes: int | None
    date: str | None
    topic: str | None
    category: str | None
    tags: tuple[str, ...]
    metadata: Mapping[str, object]
    last_indexed: str

    @property
    def extension(self) -> str:
        return extension_of(self.path)


@dataclass(frozen=True, slots=True)
class StoredChunk:
    """A chunk joined with the document fields search results need."""

    id: int
    document_path: str
    title: str
    heading: str
    heading_path: tuple[str, ...]
    content: str
    start_line: int | None
    end_line: int | None
    page: int | None
    tags: tuple[str, ...]
    date: str | None
    topic: str | None
    category: str | None


@dataclass(frozen=True, slots=True)
class IndexStats:
    documents: int
    chunks: int
    model_id: str | None
    dimension: int | None
    last_run: Mapping[str, object] | None
    schema_revision: str | None


@dataclass(slots=True)
class RunSummary:
    """The outcome of one index run, printed by the CLI and returned by rebuild_index."""

    scanned: int = 0
    added: int = 0
    updated: int = 0
    metadata_only: int = 0
    renamed: int = 0
    deleted: int = 0
    unchanged: int = 0
    skipped: int = 0
    failed: int = 0
    chunks_embedded: int = 0
    chunks_reused: int = 0
    sizes_backfilled: int = 0
    seconds: float = 0.0
    warnings: list[str] = field(default_factory=list)
    #: why each skipped path was skipped: reason -> count (they add up to ``skipped``)
    skipped_reasons: dict[str, int] = field(default_factory=dict)
    #: why each failed path failed: reason -> count (they add up to ``failed``)
    failed_reasons: dict[str, int] = field(default_factory=dict)
    #: the paths behind ``skipped_reasons`` and ``failed_reasons``, per reason
    skipped_files: dict[str, list[str]] = field(default_factory=dict)
    failed_files: dict[str, list[str]] = field(default_factory=dict)

    def skip(self, reason: str, count: int = 1, paths: Sequence[str] = ()) -> None:
        """Count ``count`` paths skipped for ``reason`` (``paths``: those known by name)."""
        if count:
            self.skipped += count
            self.skipped_reasons[reason] = self.skipped_reasons.get(reason, 0) + count
            if paths:
                self.skipped_files.setdefault(reason, []).extend(paths)

    def fail(self, reason: str, path: str) -> None:
        """Count ``path`` as failed for ``reason`` (it never changes the exit status, unless
        ``kb-mcp index --strict``)."""
        self.failed += 1
        self.failed_reasons[reason] = self.failed_reasons.get(reason, 0) + 1
        self.failed_files.setdefault(reason, []).append(path)

    def total(self) -> int:
        """added + updated + renamed + unchanged + skipped + failed: equals ``scanned``."""
        return (self.added + self.updated + self.renamed + self.unchanged + self.skipped
                + self.failed)

    def skipped_detail(self, reasons: Mapping[str, int] | None = None) -> str:
        """``" (format not enabled: 12, symbolic link: 1)"``, most frequent first (of
        ``reasons``, by default the skip reasons)."""
        counts = self.skipped_reasons if reasons is None else reasons
        if not counts:
            return ""
        ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
        return " (" + ", ".join(f"{reason}: {n}" for reason, n in ranked) + ")"

    def line(self) -> str:
        return (
            f"scanned {self.scanned}: {self.added} added, {self.updated} updated "
            f"({self.metadata_only} metadata-only), {self.renamed} renamed, "
            f"{self.unchanged} unchanged, {self.skipped} skipped{self.skipped_detail()}, "
            f"{self.failed} failed{self.skipped_detail(self.failed_reasons)}; "
            f"{self.deleted} deleted; {self.chunks_embedded} chunks embedded, "
            f"{self.chunks_reused} reused; {self.seconds:.1f}s"
        )

    def as_dict(self, files: bool = False) -> dict[str, object]:
        """The summary for JSON; ``files`` adds the paths behind each skip and failure
        reason (``kb-mcp index -v``)."""
        found: dict[str, object] = {
            "scanned": self.scanned,
            "added": self.added,
            "updated": self.updated,
            "metadata_only": self.metadata_only,
            "renamed": self.renamed,
            "deleted": self.deleted,
            "unchanged": self.unchanged,
            "skipped": self.skipped,
            "skipped_reasons": dict(sorted(self.skipped_reasons.items())),
            "failed": self.failed,
            "failed_reasons": dict(sorted(self.failed_reasons.items())),
            "chunks_embedded": self.chunks_embedded,
            "chunks_reused": self.chunks_reused,
            "sizes_backfilled": self.sizes_backfilled,
            "seconds": round(self.seconds, 3),
            "warnings": list(self.warnings),
        }
        if files:
            found["skipped_files"] = {k: sorted(v) for k, v in sorted(self.skipped_files.items())}
            found["failed_files"] = {k: sorted(v) for k, v in sorted(self.failed_files.items())}
        return found


@dataclass(frozen=True, slots=True)
class Consistency:
    """Raw facts from the index store that doctor compares."""

    chunk_ids: frozenset[int]
    lexical_ids: frozenset[int]
    chunks_without_document: tuple[int, ...]
    documents_without_chunks: tuple[str, ...]
    null_size_paths: tuple[str, ...]
    schema_revision: str | None
    head_revision: str


#: Extension-less file names read as text (the ``txt`` format), in any letter case: the
#: files a project or a package keeps beside its documentation. A name ending in
#: ``-README`` or ``_README`` (git's ``contrib/*-README``) is one too (decision 0048).
TEXT_NAMES: frozenset[str] = frozenset({
    "authors", "bugs", "changelog", "changes", "contributing", "contributors", "copying",
    "copyright", "credits", "faq", "hacking", "history", "install", "licence", "license",
    "maintainers", "news", "notice", "readme", "thanks", "todo",
})  # fmt: skip
_TEXT_NAME_ENDS = ("-readme", "_readme")
#: Every extension some format reads, enabled or not: ``kbmcp_adapters.parsers.formats``
#: declares them format by format and a test keeps the two equal. ``README.md`` is
#: Markdown; a text name with any other suffix is qualified (``README.Debian``).
DOCUMENT_EXTENSIONS: frozenset[str] = frozenset({
    "adoc", "asciidoc", "bash", "c", "c++", "cc", "cjs", "cpp", "cts", "cxx", "docx",
    "epub", "go", "h", "h++", "hh", "hpp", "htm", "html", "hxx", "ipynb", "java", "jpeg",
    "jpg", "js", "jsx", "markdown", "md", "mjs", "mts", "pdf", "png", "pptx", "py", "pyi",
    "rest", "rs", "rst", "sh", "tif", "tiff", "ts", "tsx", "txt", "webp", "xlsx",
})  # fmt: skip
#: Suffixes that say a text-named file is packed, signed or an editor's leftover, not a
#: qualified text file: ``changelog.Debian.gz`` stays unsupported, as it was.
NOT_QUALIFIERS: frozenset[str] = frozenset({
    "gz", "bz2", "xz", "zst", "lz", "lzma", "lz4", "z", "br", "zip", "7z", "tar", "tgz",
    "sig", "asc", "gpg", "swp", "swo", "swx", "o", "so", "a", "pyc", "bin", "exe", "dll",
})  # fmt: skip
_QUALIFIER = re.compile(r"[A-Za-z0-9][A-Za-z0-9_+-]*")


def is_text_name(name: str) -> bool:
    """True for a file name (no folder) on ``TEXT_NAMES``, ending in ``-README``, or one of
    those qualified: ``README.Debian``, ``NEWS.Debian``, ``README.venv``, ``COPYING.LIB``
    (a stem on the list and suffixes that are no format's extension, not a packed one)."""
    folded = name.lower()
    if folded in TEXT_NAMES or (folded.endswith(_TEXT_NAME_ENDS) and "." not in folded):
        return True
    stem, _, rest = folded.partition(".")
    if stem not in TEXT_NAMES or not rest:
        return False
    suffixes = rest.split(".")
    return (all(_QUALIFIER.fullmatch(s) for s in suffixes)
            and suffixes[-1] not in DOCUMENT_EXTENSIONS
            and not NOT_QUALIFIERS.intersection(suffixes))


def extension_of(path: str) -> str:
    """Lower-case extension without the dot ('' when there is none); ``txt`` for a text
    file by name (``README``, ``NEWS``, ``README.Debian``: ``is_text_name``).

    The extension is the text after the last dot of the file name, provided at least one
    character comes before that dot: ``..md`` and ``.notes.md`` are Markdown, a bare
    ``.md`` is a dotfile with no extension (decision 0009).
    """
    name = path.rsplit("/", 1)[-1]
    dot = name.rfind(".")
    if is_text_name(name):
        return "txt"
    return name[dot + 1 :].lower() if dot > 0 else ""


#: What ``vector_text_of`` gives the model, recorded in the index: an index whose vectors
#: were made from other text has them all re-embedded by its next run (decisions 0020
#: and 0056, sixth addendum: the folders a document sits in lead its chunks' text).
EMBED_TEXT = "prose-folder-1"
#: The text decision 0020 gave the model: the same as ``EMBED_TEXT`` for a document at the
#: top of the folder (it has no place), so such an index keeps its vectors.
EMBED_TEXT_UNPLACED = "prose-1"
#: Fenced code blocks, and lines that are nothing but one inline code span (a command).
_FENCED = re.compile(r"^[ \t]{0,3}(`{3,}|~{3,})[^\n]*\n.*?(?:^[ \t]{0,3}\1[^\n]*$|\Z)",
                     re.S | re.M)
_CODE_LINE = re.compile(r"^[ \t]*`[^`\n]+`[ \t]*$", re.M)
_BLANK_RUNS = re.compile(r"\n{3,}")
#: Below this many characters of prose a chunk is embedded whole (it is mostly code).
MIN_PROSE_CHARS = 20


def prose_of(content: str) -> str:
    """The chunk's text without its code blocks and command-only lines: what a sentence
    embedding model reads well. A chunk that is (nearly) all code stays whole."""
    if "`" not in content and "~~~" not in content:
        return content
    prose = _BLANK_RUNS.sub("\n\n", _CODE_LINE.sub("", _FENCED.sub("", content))).strip()
    return prose if len(prose) >= MIN_PROSE_CHARS else content


def whole_text_of(heading_path: tuple[str, ...], content: str) -> str:
    """Heading trail plus the whole body: what a chunk's size is measured on (so the model
    never truncates it), what its hash covers, and what a reader or reranker is shown. Not
    what the model embeds: that is ``vector_text_of``, the prose of it (decision 0020)."""
    trail = " > ".join(h for h in heading_path if h)
    return f"{trail}\n{content}" if trail else content


def place_of(path: str) -> str:
    """Where a document sits, as the model reads it ahead of each of its chunks: the
    folders of its path (``gdb/NEWS.txt`` → ``gdb``, ``lsof/00FAQ.txt`` → ``lsof``), which
    often name its subject where its text does not; "" for a file at the top (decision
    0056, fourth and sixth addenda: the file's own name, tried too, cost some folders
    their first hits)."""
    return path.rsplit("/", 1)[0] if "/" in path else ""


def vector_text_of(heading_path: tuple[str, ...], content: str, path: str = "") -> str:
    """The document's place (``place_of(path)``, when it has one), the heading trail and
    the body's prose (``prose_of``): what the embedding model is given for a chunk. The
    text shown, cited and hashed (``whole_text_of``) leaves the place out, and so do the
    paragraphs a search reads (``passages``: they choose among one document's parts,
    which share it). A vector reused by its hash (``ChunkRecord.text_hash``) comes from a
    chunk of the same text: a renamed document keeps its vectors, and a chunk whose text
    another folder already holds gets that chunk's vector (decision 0056, sixth
    addendum)."""
    place = place_of(path)
    trail = (place, *heading_path) if place else heading_path
    return whole_text_of(trail, prose_of(content))


@dataclass(frozen=True, slots=True)
class DocumentFilter:
    """The document-level filters of a search. A store applies them in its own query
    language; ``matches`` is their meaning, on one document row.

    ``path_globs``: ``fnmatch`` patterns on the path (``*`` crosses ``/``); a path must
    match one pattern without ``!`` (when there is one) and none given as ``!pattern``.
    Tags, category and topic compare case-insensitively (``str.lower``); a date bound
    excludes documents without a date."""

    path_globs: tuple[str, ...] | None = None
    tags_any: tuple[str, ...] = ()
    tags_all: tuple[str, ...] = ()
    date_from: str | None = None
    date_to: str | None = None
    category: str | None = None
    topic: str | None = None
    #: declared-field conditions (``field_filters``): every one of ``fields`` must hold,
    #: none of ``fields_not``
    fields: tuple[FieldCondition, ...] = ()
    fields_not: tuple[FieldCondition, ...] = ()

    @property
    def includes(self) -> tuple[str, ...]:
        return tuple(g for g in self.path_globs or () if not g.startswith("!"))

    @property
    def excludes(self) -> tuple[str, ...]:
        return tuple(g[1:] for g in self.path_globs or () if g.startswith("!"))

    def matches(self, doc: StoredDocument, fields: Sequence[FieldValue] = ()) -> bool:
        """Whether ``doc`` (whose declared-field rows are ``fields``) is kept."""
        if not all(c.matches(fields) for c in self.fields):
            return False
        if any(c.matches(fields) for c in self.fields_not):
            return False
        if self.includes and not any(fnmatch.fnmatchcase(doc.path, g) for g in self.includes):
            return False
        if any(fnmatch.fnmatchcase(doc.path, g) for g in self.excludes):
            return False
        tags = {t.lower() for t in doc.tags}
        if self.tags_any and not tags & {t.lower() for t in self.tags_any}:
            return False
        if self.tags_all and not {t.lower() for t in self.tags_all} <= tags:
            return False
        if self.date_from is not None and (doc.date is None or doc.date < self.date_from):
            return False
        if self.date_to is not None and (doc.date is None or doc.date > self.date_to):
            return False
        if self.category is not None and (doc.category or "").lower() != self.category.lower():
            return False
        return self.topic is None or (doc.topic or "").lower() == self.topic.lower()
