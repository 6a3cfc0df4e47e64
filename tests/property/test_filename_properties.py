"""Properties of file names on disk, as bytes: whatever a folder holds, the index run ends.

Names are generated as bytes and written with ``os.open`` on bytes paths: invalid UTF-8
(``0xff``, an encoded surrogate ``ed a0 80``, overlong forms), newlines and control
characters, leading dots, spaces, CJK, names up to 255 bytes, in folders whose own names
may be just as odd. The walk and a library index run must finish without an exception;
every regular ``.md`` file whose path is valid UTF-8 is indexed; every other ``.md`` file is
refused with a reason the run reports (nothing silent), and nothing else is indexed.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from hypothesis import event, given, settings
from hypothesis import strategies as st

from kbmcp_adapters.embedding.fastembed_embedder import FastEmbedEmbedder
from tests.property.support import budget, open_kb

NAME_PARTS = (
    b"ok", b"note", b"\xff", b"\xfe", b"\xed\xa0\x80", b"\xed\xbf\xbf", b"\xc0\xae",
    b"\xe0\x80\xae", b"\xf4\x90\x80\x80", b"\x80", b"\xe6\x97\xa5\xe6\x9c\xac", b" ", b"\n",
    b"\r", b"\t", b"\x01", b"\x1b", b"\x7f", b"\xc2\x85", b"\xe2\x80\xae", b"\xef\xbb\xbf",
    b"e\xcc\x81", b".", b"..", b"-", b"%2e", b"%ff", b"\\", b"*", b"?", b"[", b"]", b"#",
    b"!", b":", b"~", b"'", b'"', b"$", b"\xf0\x9f\x99\x82",
)  # fmt: skip
SUFFIXES = (b".md", b".md", b".md", b".MD", b".Md", b".md ", b".md.bak", b".txt", b"", b"md")
#: Folder names; dot-leading ones are left out here (the default exclusions name some).
DIRS = (None, None, None, b"sub", b"d\xff", b"\xed\xa0\x80", b"sp ace", b"\xe6\x97\xa5",
        b"new\nline", b"sub/d\xfe")  # fmt: skip
#: Names that configure kb-mcp rather than hold a document.
RESERVED = {b".kb-mcp", b".kb-mcpignore", b"kb-mcp.toml", b".", b".."}


def _valid_name(name: bytes) -> bool:
    return 0 < len(name) <= 255 and b"/" not in name and b"\x00" not in name \
        and name not in RESERVED


stems = st.one_of(
    st.lists(st.sampled_from(NAME_PARTS), min_size=1, max_size=6).map(b"".join),
    st.binary(min_size=1, max_size=12),
    st.integers(1, 252).map(lambda n: b"l" * n),
    st.sampled_from([b".", b"..", b".hidden", b"...", b" ", b"-"]),
)
names = st.builds(lambda stem, suffix: (stem + suffix)[-255:], stems,
                  st.sampled_from(SUFFIXES)).filter(_valid_name)
entries = st.lists(st.tuples(st.sampled_from(DIRS), names), min_size=1, max_size=6,
                   unique_by=lambda e: (e[0] or b"") + b"/" + e[1])


@dataclass(frozen=True)
class Written:
    rel: bytes  # relative path as bytes, '/'-separated

    @property
    def text(self) -> str | None:
        try:
            return self.rel.decode("utf-8")
        except UnicodeDecodeError:
            return None

    @property
    def is_md(self) -> bool:
        """Named like Markdown (``..md``, the page of the ``.`` command, included)."""
        return self.rel.lower().endswith(b".md")

    @property
    def dot_leading(self) -> bool:
        return any(part.startswith(b".") for part in self.rel.split(b"/"))

    def unit(self) -> bytes:
        """What a refusal may name: the first odd folder on the path, or the file itself."""
        parts = self.rel.split(b"/")
        for i, part in enumerate(parts[:-1]):
            try:
                part.decode("utf-8")
            except UnicodeDecodeError:
                return b"/".join(parts[: i + 1])
            if part.startswith(b"."):
                return b"/".join(parts[: i + 1])
        return self.rel

    def shown(self) -> set[str]:
        """How a warning may show this path (or its first undecodable folder)."""
        forms = set()
        rels = [self.rel] + [self.rel[:i] for i in range(len(self.rel)) if self.rel[i:i + 1]
                             == b"/"]
        for rel in rels:
            for errors in ("surrogateescape", "backslashreplace", "replace"):
                forms.add(rel.decode("utf-8", errors))
            forms.add(repr(os.fsdecode(rel))[1:-1])
            forms.add(repr(rel)[2:-1])
        return forms


def write_files(root: bytes, entries: list[tuple[bytes | None, bytes]]) -> list[Written]:
    written = []
    for i, (folder, name) in enumerate(entries):
        rel = (folder + b"/" + name) if folder else name
        if folder:
            os.makedirs(root + b"/" + folder, exist_ok=True)
        path = root + b"/" + rel
        if os.path.isdir(path):  # a name equal to one of the folders
            continue
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        try:
            os.write(fd, f"# Document {i}\n\nBody of document number {i}: zebra{i}.\n".encode())
        finally:
            os.close(fd)
        written.append(Written(rel))
    return written


def reported(w: Written, warnings: list[str]) -> bool:
    return any(form in warning for warning in warnings for form in w.shown())


@settings(max_examples=budget(60))
@given(files=entries)
def test_any_file_names_index_or_are_refused_with_a_reason(
    embedder: FastEmbedEmbedder, files: list[tuple[bytes | None, bytes]]
) -> None:
    root = tempfile.mkdtemp(prefix="kb-names-")
    try:
        written = write_files(os.fsencode(root), files)
        kb = open_kb(Path(root), embedder)
        try:
            scan = kb.scan()  # the walk alone: no exception
            summary = kb.index()
            indexed = set(kb.indexed_paths())
            again = kb.index()  # a second run over the same folder changes nothing
        finally:
            kb.close()
    finally:
        shutil.rmtree(root)
    assert scan is not None
    encoded_index = {os.fsencode(p) for p in indexed}
    for w in written:
        if not w.is_md:
            assert w.rel not in encoded_index, f"{w.rel!r} is not Markdown but was indexed"
            continue
        if w.text is None:
            event("undecodable .md")
            assert w.rel not in encoded_index
            assert reported(w, summary.warnings), (w.rel, summary.warnings)
        elif w.dot_leading:
            event("dot-leading .md")
            assert w.text in indexed or reported(w, summary.warnings), (w.rel, summary.warnings)
        else:
            event("valid .md")
            assert w.text in indexed, (w.rel, sorted(indexed), summary.warnings)
    refused = {w.unit() for w in written if w.is_md and w.text not in indexed}
    assert summary.skipped >= len(refused), (summary.skipped, refused)
    assert again.added == again.updated == again.deleted == 0, again.as_dict()
    assert indexed <= {w.text for w in written if w.text is not None}
