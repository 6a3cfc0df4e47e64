"""Several documents in one read (``get_documents``): paths or a glob chosen among the
offered documents, each read by the one guard chain, all within one size budget.

Nothing is cut to fit: a document that does not fit what is left of the budget is listed
as left out, with the reason; a path that cannot be read is an error of its own, never a
failed call. A store that fails, or no index at all, fails the whole call.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from kbmcp_core.errors import (
    IndexNotFound,
    InvalidQuery,
    KbError,
    NotOffered,
    PathRefused,
    StoreError,
)
from kbmcp_core.models import MIB, extension_of
from kbmcp_core.offer import OfferRules
from kbmcp_core.reading import BINARY_FORMATS, TEXT_READ_CAP, clean_request_path

#: The most documents one call reads (a longer list is refused; a glob's first ones).
MAX_BATCH_DOCUMENTS = 50
#: The budget when the caller names none, in characters.
DEFAULT_BATCH_CHARS = 200_000
#: The largest budget: the read cap. The UTF-8 bytes of the texts stay under it too.
MAX_BATCH_CHARS = TEXT_READ_CAP

D = TypeVar("D")


@dataclass(frozen=True, slots=True)
class LeftOut:
    """An offered document that was not sent, and why (the budget, or the document cap)."""

    path: str
    reason: str


@dataclass(frozen=True, slots=True)
class PathError:
    """A path that cannot be read: refused by the guard chain, not offered, or a failure
    of that one document (``code`` as a tool error would carry it)."""

    path: str
    code: str
    message: str


@dataclass(frozen=True, slots=True)
class Batch(Generic[D]):
    documents: tuple[D, ...]
    left_out: tuple[LeftOut, ...]
    errors: tuple[PathError, ...]
    max_chars: int
    #: characters of text sent, all documents together
    chars: int
    #: how many offered documents the glob matched (None for a list of paths)
    matched: int | None = None
    notices: tuple[str, ...] = field(default=())


def check_request(paths: Sequence[str] | None, glob: str | None, max_chars: int) -> None:
    """Exactly one of ``paths`` (1..MAX_BATCH_DOCUMENTS) and ``glob``; a budget in range."""
    if (paths is None) == (glob is None):
        raise InvalidQuery("give either paths (a list) or glob, not both and not neither")
    if paths is not None and not 1 <= len(paths) <= MAX_BATCH_DOCUMENTS:
        raise InvalidQuery(f"paths has {len(paths)} items; give 1 to {MAX_BATCH_DOCUMENTS}")
    if glob is not None and not glob.strip():
        raise InvalidQuery("glob must not be empty")
    if isinstance(max_chars, bool) or not 1 <= max_chars <= MAX_BATCH_CHARS:
        raise InvalidQuery(f"max_chars must be between 1 and {MAX_BATCH_CHARS}, "
                           f"got {max_chars}")


def read_batch(
    rules: OfferRules,
    read: Callable[[str], D],
    text_of: Callable[[D], str],
    *,
    paths: Sequence[str] | None = None,
    glob: str | None = None,
    max_chars: int = DEFAULT_BATCH_CHARS,
) -> Batch[D]:
    """Read ``paths`` in their order (or the offered paths ``glob`` matches, sorted; ``*``
    crosses ``/`` as in search's ``path_globs``) with ``read``, one guarded read each,
    while their texts fit ``max_chars`` characters and ``TEXT_READ_CAP`` bytes."""
    check_request(paths, glob, max_chars)
    errors: list[PathError] = []
    notices: list[str] = []
    matched: int | None = None
    if glob is not None:
        chosen = [p for p in rules.offered_paths() if fnmatch.fnmatchcase(p, glob)]
        matched = len(chosen)
        if matched > MAX_BATCH_DOCUMENTS:
            notices.append(f"the glob matched {matched} documents; only the first "
                           f"{MAX_BATCH_DOCUMENTS} (by path) were considered: narrow it")
            chosen = chosen[:MAX_BATCH_DOCUMENTS]
        if not chosen:
            notices.append("the glob matched no offered document")
    else:
        chosen = _offered_in_order(paths or (), rules, errors)
    documents: list[D] = []
    left_out: list[LeftOut] = []
    chars_left, bytes_left = max_chars, TEXT_READ_CAP
    recorded = _text_sizes(rules, chosen)
    for path in chosen:
        if chars_left == 0:
            left_out.append(LeftOut(path, f"the budget of {max_chars} characters is used up"))
            continue
        size_on_disk = recorded.get(path)
        if size_on_disk is not None and size_on_disk > TEXT_READ_CAP:  # never read: no fit
            left_out.append(LeftOut(path, f"{size_on_disk} bytes: past the "
                                          f"{TEXT_READ_CAP // MIB} MiB read cap; read it in "
                                          "ranges with get_document (start_line and "
                                          "max_lines, or section)"))
            continue
        try:
            doc = read(path)
        except (StoreError, IndexNotFound):
            raise
        except KbError as exc:
            errors.append(_error(path, exc))
            continue
        text = text_of(doc)
        size, raw = len(text), len(text.encode("utf-8", "surrogatepass"))
        if size <= chars_left and raw <= bytes_left:
            documents.append(doc)
            chars_left, bytes_left = chars_left - size, bytes_left - raw
        elif size > max_chars or raw > TEXT_READ_CAP:
            left_out.append(LeftOut(path, f"{size} characters: larger than the whole budget "
                                          f"({max_chars}); read it alone with get_document"))
        else:
            left_out.append(LeftOut(path, f"{size} characters; {chars_left} of the "
                                          f"{max_chars}-character budget were left: ask "
                                          "for it in another call or with a larger "
                                          "max_chars"))
    return Batch(tuple(documents), tuple(left_out), tuple(errors), max_chars,
                 max_chars - chars_left, matched, tuple(notices))


def _text_sizes(rules: OfferRules, paths: Sequence[str]) -> dict[str, int]:
    """The recorded sizes of the text formats among ``paths``: their bytes are their text
    (a converted format's are not, so it is read and measured)."""
    if not paths:
        return {}
    return {d.path: d.size_bytes for d in rules.store.documents(paths)
            if d.size_bytes is not None and extension_of(d.path) not in BINARY_FORMATS}


def _offered_in_order(paths: Sequence[str], rules: OfferRules,
                      errors: list[PathError]) -> list[str]:
    """The offered ones among ``paths`` (after the path guard), first mention kept; the
    rest become errors."""
    chosen: list[str] = []
    for raw in paths:
        try:
            path = str(clean_request_path(raw))
            if path in chosen:
                continue
            if not rules.is_offered(path):
                raise NotOffered(path, "not offered by this knowledge base (not indexed, "
                                        "its format is off, or past its read cap)")
        except PathRefused as exc:
            errors.append(_error(raw, exc))
            continue
        chosen.append(path)
    return chosen


def _error(path: str, exc: KbError) -> PathError:
    if isinstance(exc, PathRefused):  # as a tool error says it (``failure_result``)
        return PathError(path, PathRefused.code, exc.reason)
    return PathError(path, exc.code, exc.public_message)


__all__ = [
    "DEFAULT_BATCH_CHARS",
    "MAX_BATCH_CHARS",
    "MAX_BATCH_DOCUMENTS",
    "Batch",
    "LeftOut",
    "PathError",
    "check_request",
    "read_batch",
]
