"""The read path: the single cap chooser and the single guard chain (``load_document``)."""

from __future__ import annotations

import hashlib
import logging
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import NewType

from kbmcp_core.errors import (
    IndexNotFound,
    KbError,
    NoSuchDocument,
    PathRefused,
    ReadBusy,
    StoreError,
)
from kbmcp_core.models import INDEX_CAP_BYTES, MIB, extension_of
from kbmcp_core.ports import ConvertedText, ConvertedTexts, FileSystem, ParserRegistry

log = logging.getLogger(__name__)

#: How much text kb-mcp hands a client in one response.
TEXT_READ_CAP = 1 * MIB
#: A ranged read loads a document up to the index cap; each reply stays under TEXT_READ_CAP.
RANGED_READ_CAP = INDEX_CAP_BYTES
#: What a refusal of a whole read past the read cap adds: how to read it instead.
RANGE_HINT = ("; read it in ranges instead: get_document with start_line and max_lines, "
              "section or page (outline=true lists its headings), `kb-mcp get PATH --lines "
              "1-1000`, or a kb://doc/...#L1-1000 URI")
#: Binary formats are read under the index cap; their extracted text is cut at this size.
EXTRACTED_TEXT_CAP = 1 * MIB
#: Formats converted to Markdown text by their parser (HTML, Office, EPUB): that Markdown
#: is what is indexed, cited by line and served.
CONVERTED_FORMATS = frozenset({"html", "htm", "docx", "pptx", "xlsx", "epub"})
#: Formats whose bytes are not the text that is served: read under the index cap, their
#: extracted text cut at EXTRACTED_TEXT_CAP with a notice.
#: Images, read by OCR (the ``ocr`` format, decision 0053): served as the recognised text.
IMAGE_FORMATS = frozenset({"png", "jpg", "jpeg", "tif", "tiff", "webp"})
BINARY_FORMATS = frozenset({"pdf"}) | CONVERTED_FORMATS | IMAGE_FORMATS

TRUNCATION_NOTICE = (
    "\n\n---\n[kb-mcp: this document's extracted text is longer than {cap} MiB; only the "
    "first {cap} MiB is shown. Use the search tool to find passages further in.]\n"
)

#: Conversions one server runs at once (reads of a converted document whose text the
#: index does not hold); a read that needs one more waits for a slot.
CONVERSION_SLOTS = 2
#: How long such a read waits for a slot before it is refused with ``server_busy``.
CONVERSION_WAIT_S = 30.0

_DRIVE = re.compile(r"^[A-Za-z]:")

#: A relative path ``clean_request_path`` accepted (and normalised); what ``load_clean`` takes.
RequestPath = NewType("RequestPath", str)


def not_read_reason(extension: str, supported: bool) -> str:
    """Why a file without an enabled parser is not read: a format kb-mcp has names the
    key that enables it; any other says so and suggests nothing to enable."""
    if supported:
        return f"the {extension} format is not enabled; add it to [parsers].enabled"
    if not extension:
        return ("not a supported format: a file without an extension is read only when its "
                "name is one of the text names (README, NEWS, AUTHORS, CHANGELOG, ...)")
    return f"not a supported format (kb-mcp does not read .{extension} files)"


def max_bytes_for(extension: str) -> int:
    """The one read cap per extension, used by the listing, the stat check and the read."""
    return INDEX_CAP_BYTES if extension.lower() in BINARY_FORMATS else TEXT_READ_CAP


def readable_bytes_for(extension: str) -> int:
    """The most bytes any read of ``extension`` accepts: a ranged read (``ranges``) takes
    every format up to the index cap, because each of its replies stays under the read
    cap. The offer (``offer.OfferRules``) and doctor use it, so the offer says exactly
    what a read accepts (decision 0033)."""
    return max(max_bytes_for(extension), RANGED_READ_CAP)


def media_type_for(extension: str) -> str:
    """What a read serves: Markdown as it is and the Markdown a converted format becomes;
    plain text for text files and text extracted from PDF."""
    ext = extension.lower()
    return "text/markdown" if ext in ("md", "markdown") or ext in CONVERTED_FORMATS else (
        "text/plain")


@dataclass(frozen=True, slots=True)
class LoadedDocument:
    path: str
    text: str
    truncated: bool
    media_type: str
    #: sha256 of the bytes read, when the load was asked for it (or had to compute it)
    content_hash: str | None = None


def clean_request_path(raw: str) -> RequestPath:
    """Validate a client-supplied relative path; refuse anything that could escape.

    Refused: empty, lone surrogates, NUL or control characters, backslashes, absolute
    paths (POSIX or drive letters), and any ``..`` segment. ``.`` and empty segments are dropped.
    """
    if not isinstance(raw, str) or not raw.strip():
        raise PathRefused("", "empty path")
    shown = raw[:200]
    try:
        raw.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: no file on any disk has that name
        shown = shown.encode("utf-8", "backslashreplace").decode("utf-8")
        raise PathRefused(shown, "not a valid Unicode path") from None
    if any(ord(ch) < 32 for ch in raw):
        raise PathRefused(shown.replace("\x00", "\\0"), "control characters are not allowed")
    if "\\" in raw:
        raise PathRefused(shown, "backslashes are not allowed")
    if raw.startswith("/") or _DRIVE.match(raw):
        raise PathRefused(shown, "absolute paths are not allowed; use a path relative to the "
                                 "knowledge base")
    parts = [p for p in raw.split("/") if p not in ("", ".")]
    if any(p == ".." for p in parts):
        raise PathRefused(shown, "'..' is not allowed")
    if not parts:
        raise PathRefused(shown, "empty path")
    return RequestPath("/".join(parts))


class ConversionGate:
    """At most ``slots`` conversions at once in one process: converting a large page or
    workbook can take a gigabyte and a minute, so concurrent reads of such documents queue
    here. A read waits ``wait_s`` seconds for a slot, then is refused with ``ReadBusy``
    (``server_busy``); reads the index already holds the text of never queue."""

    def __init__(self, slots: int = CONVERSION_SLOTS, wait_s: float = CONVERSION_WAIT_S) -> None:
        if slots < 1:
            raise ValueError("a conversion gate needs at least one slot")
        self.slots = slots
        self.wait_s = wait_s
        self._free = threading.BoundedSemaphore(slots)
        self._count = threading.Lock()
        self._waiting = 0

    @property
    def waiting(self) -> int:
        """Reads waiting for a slot right now."""
        return self._waiting

    @contextmanager
    def slot(self, path: str) -> Iterator[None]:
        with self._count:
            self._waiting += 1
        try:
            got = self._free.acquire(timeout=self.wait_s)
        finally:
            with self._count:
                self._waiting -= 1
        if not got:
            raise ReadBusy(f"{path!r}: the server is already converting {self.slots} "
                           "documents and none finished within "
                           f"{self.wait_s:g} s; try again in a moment")
        try:
            yield
        finally:
            self._free.release()


def conversion_of(content_hash: str, text: str) -> ConvertedText | None:
    """What the index keeps of a conversion of the bytes hashing to ``content_hash``: the
    text a read serves (cut at ``EXTRACTED_TEXT_CAP``) and the length of the whole. None
    for a text holding a NUL character, which PostgreSQL cannot store: such a document is
    converted on every read instead."""
    served, _ = cut_utf8(text, EXTRACTED_TEXT_CAP)
    if "\x00" in served:
        return None
    return ConvertedText(content_hash, served, len(text))


def load_document(path: str, fs: FileSystem, registry: ParserRegistry,
                  conversions: ConvertedTexts | None = None,
                  gate: ConversionGate | None = None) -> LoadedDocument:
    """THE guard chain, shared by ``get_document`` and ``resources/read`` (which runs step 1
    as ``uris.parse_uri`` decodes its URI, then ``load_clean``: once per read, not twice).

    1. Path syntax: no NUL or control characters, backslash, absolute path or ``..``.
       These refusals name what is wrong with the name's form, whatever is on disk.
    2. The extension must be an enabled format: a name of any other is never opened.
    3. One open bound to the root (see ``FileSystem``): refuses a link anywhere on the
       path, a missing path, a folder, a special file and more than one hard link.
       Step 2 and 3 refuse alike (``NoSuchDocument``: "no such document", the real
       reason in ``why`` for the server's log), so no answer tells a client whether a
       name it may not read exists.
    4. On that same handle: the size (``fstat``) must fit ``max_bytes_for(ext)``, and at
       most cap+1 bytes are read.
    5. A converted format (``BINARY_FORMATS``): the sha256 of those bytes finds the text
       the index run kept for exactly them in ``conversions``; only without one is the
       file converted, inside one of ``gate``'s slots. A read never writes the index.

    There is no check on the path before the open for an attacker to race: every fact
    comes from the one descriptor the bytes are read from.
    """
    return load_clean(clean_request_path(path), fs, registry, conversions, gate)


def load_clean(rel: RequestPath, fs: FileSystem, registry: ParserRegistry,
               conversions: ConvertedTexts | None = None,
               gate: ConversionGate | None = None, *, whole: bool = True,
               digest: bool = False) -> LoadedDocument:
    """``load_document`` from step 2 on, for a path step 1 already accepted (a ``kb://doc/``
    URI's, which ``uris.parse_uri`` guards): the guard runs once per read.

    ``whole=False`` is the load behind a ranged read (``ranges``): a text file is read up
    to ``RANGED_READ_CAP`` instead of ``max_bytes_for``, and a converted format's text is
    never cut (a kept conversion that was cut is converted again, in a gate slot), since
    the range, not the load, keeps the reply under the read cap. ``digest=True`` records
    the sha256 of the bytes read (``LoadedDocument.content_hash``)."""
    ext = extension_of(rel)
    parser = registry.parser_for(ext)
    if parser is None:
        raise NoSuchDocument(rel, not_read_reason(ext, registry.supports(ext)))
    cap = max_bytes_for(ext) if whole else readable_bytes_for(ext)
    with fs.open_file(rel) as handle:
        data = handle.read(cap)
    if data is None:
        hint = RANGE_HINT if whole and cap < readable_bytes_for(ext) else ""
        raise PathRefused(rel, f"larger than the {cap // MIB} MiB read cap{hint}")
    if ext not in BINARY_FORMATS:
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            raise PathRefused(rel, "not valid UTF-8 text") from None
        hashed = hashlib.sha256(data).hexdigest() if digest else None
        return LoadedDocument(rel, text.removeprefix("\ufeff"), False, media_type_for(ext),
                              hashed)
    sha = hashlib.sha256(data).hexdigest()
    kept = _kept_conversion(conversions, sha)
    if kept is not None and (whole or not kept.truncated):
        return LoadedDocument(rel, kept.text, kept.truncated, media_type_for(ext), sha)
    with gate.slot(rel) if gate is not None else _no_gate():
        try:
            text = parser.extract_text(rel, data)
        except KbError as exc:
            raise PathRefused(rel, f"its text cannot be extracted ({exc})") from None
        except Exception as exc:  # a hostile file costs its own read, never the server
            raise PathRefused(rel, f"its text cannot be extracted ({type(exc).__name__})"
                              ) from None
    del data
    if not whole:
        return LoadedDocument(rel, text, False, media_type_for(ext), sha)
    text, truncated = cut_utf8(text, EXTRACTED_TEXT_CAP)
    return LoadedDocument(rel, text, truncated, media_type_for(ext), sha)


def _kept_conversion(conversions: ConvertedTexts | None, digest: str) -> ConvertedText | None:
    """The text the index keeps for ``digest``; None when there is none, no index yet, or
    the store cannot answer (the file is then converted: a read never fails for want of
    a kept text)."""
    if conversions is None:
        return None
    try:
        return conversions.converted_text(digest)
    except IndexNotFound:
        return None
    except StoreError as exc:
        log.warning("the index store did not answer for a kept conversion (%s); converting "
                    "the file instead", exc)
        return None


@contextmanager
def _no_gate() -> Iterator[None]:
    yield


def cut_utf8(text: str, limit: int) -> tuple[str, bool]:
    """At most ``limit`` bytes of UTF-8, never splitting a character."""
    raw = text.encode("utf-8")
    if len(raw) <= limit:
        return text, False
    return raw[:limit].decode("utf-8", errors="ignore"), True
