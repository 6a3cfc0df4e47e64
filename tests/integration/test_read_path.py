"""The guard chain and the offer on a real folder (ADR-0004 / ADR-0005 behaviour)."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from kbmcp_adapters.app.bootstrap import bootstrap
from kbmcp_adapters.app.config import build_settings
from kbmcp_adapters.app.knowledge_base import KnowledgeBase
from kbmcp_adapters.embedding.fastembed_embedder import FastEmbedEmbedder
from kbmcp_adapters.filesystem.local import LocalFileSystem
from kbmcp_core.errors import NotOffered, PathRefused
from kbmcp_core.reading import TRUNCATION_NOTICE, load_document
from kbmcp_core.uris import doc_uri
from tests.conftest import OpenKb, make_big_pdf, write_files

MIB = 1024 * 1024


def big_markdown(size: int) -> str:
    para = "The quarterly archive lists every shipment and its customs reference.\n\n"
    return "# Archive\n\n" + para * (size // len(para) + 1)


def build_kb(base: Path, embedder: FastEmbedEmbedder) -> KnowledgeBase:
    root = base / "kb"
    outside = base / "outside"
    write_files(outside, {"secret.md": "# Secret\n\nlaunch codes\n"})
    write_files(root, {
        "notes/plain.md": "# Plain\n\nA normal note about bread.\n",
        "notes/hard.md": "# Hard\n\nhard-linked\n",
        "notes/big.md": big_markdown(2 * MIB),
        "notes/ünïcode name with space.md": "# Ü\n\nunicode path body\n",
        "drafts/hidden.md": "# Hidden\n\ndraft text about kites\n",
        ".kb-mcpignore": "drafts/\n",
        "venv/tool.md": "# Tool\n\nexcluded by exclude_dirs\n",
    })
    make_big_pdf(root / "papers/telemetry.pdf")
    os.symlink(outside / "secret.md", root / "notes/link.md")
    os.link(root / "notes/hard.md", base / "hardlink-elsewhere.md")
    settings = build_settings(None, cwd=root, kb_path=root, enabled_formats=("md", "pdf"))
    k = KnowledgeBase(bootstrap(settings, embedder=embedder))
    k.index()
    # written after the index run: on disk, not indexed
    write_files(root, {"notes/later.md": "# Later\n\nwritten after indexing\n"})
    os.mkfifo(root / "notes/pipe.md")
    return k


@pytest.fixture(scope="module")
def kb(tmp_path_factory: pytest.TempPathFactory,
       embedder: FastEmbedEmbedder) -> Iterator[KnowledgeBase]:
    """Read-only tests share one indexed knowledge base."""
    k = build_kb(tmp_path_factory.mktemp("readpath"), embedder)
    yield k
    k.close()


@pytest.fixture
def own_kb(tmp_path: Path, embedder: FastEmbedEmbedder) -> Iterator[KnowledgeBase]:
    """For tests that change the index."""
    k = build_kb(tmp_path, embedder)
    yield k
    k.close()


def test_big_markdown_is_offered_and_read_in_ranges(kb: KnowledgeBase) -> None:
    """Over the 1 MiB read cap, under the 50 MiB index cap: found, offered, and read in
    ranges; a whole read says how (decision 0033)."""
    hits = kb.search("quarterly archive customs reference shipment").results
    hit = next(h for h in hits if h.path == "notes/big.md")
    assert hit.uri is not None
    assert "notes/big.md" in kb.offered_paths()
    body = "".join(kb.read_resource(g.uri).text for g in kb.topic_groups())
    assert "big.md" in body
    first = kb.read_resource(doc_uri("notes/big.md")).text
    assert len(first.encode()) <= MIB and "notes/big.md#L" in first.rsplit("---", 1)[1]
    with pytest.raises(PathRefused, match="read it in ranges"):
        kb.get_document("notes/big.md")
    part = kb.get_document("notes/big.md", start_line=1, max_lines=3)
    assert part.content == "# Archive\n\nThe quarterly archive lists every shipment and its "\
        "customs reference.\n"
    assert kb.doctor().findings == ()


def test_big_pdf_is_offered_and_read_truncated_with_a_notice(kb: KnowledgeBase) -> None:
    assert (kb.settings.kb_path / "papers/telemetry.pdf").stat().st_size > MIB
    assert "papers/telemetry.pdf" in kb.offered_paths()
    body = kb.read_resource(doc_uri("papers/telemetry.pdf"))
    assert body.media_type == "text/plain"
    notice = TRUNCATION_NOTICE.format(cap=1)
    assert body.text.endswith(notice)
    assert len(body.text.removesuffix(notice).encode()) <= MIB
    doc = kb.get_document("papers/telemetry.pdf")
    assert doc.truncated and notice not in doc.content


def test_unindexed_file_is_readable_by_path_but_not_as_a_resource(kb: KnowledgeBase) -> None:
    assert kb.get_document("notes/later.md").content.startswith("# Later")
    with pytest.raises(NotOffered):
        kb.read_resource(doc_uri("notes/later.md"))


@pytest.mark.parametrize("path", ["drafts/hidden.md", "venv/tool.md"])
def test_excluded_file_is_readable_by_path_but_not_offered(kb: KnowledgeBase,
                                                           path: str) -> None:
    assert kb.get_document(path).content
    assert path not in kb.offered_paths()
    with pytest.raises(NotOffered):
        kb.read_resource(doc_uri(path))


def test_resource_read_serves_markdown_text_with_its_media_type(kb: KnowledgeBase) -> None:
    body = kb.read_resource(doc_uri("notes/plain.md"))
    assert (body.text, body.media_type) == ("# Plain\n\nA normal note about bread.\n",
                                            "text/markdown")


def test_non_ascii_and_space_paths_round_trip_through_uris(kb: KnowledgeBase) -> None:
    uri = doc_uri("notes/ünïcode name with space.md")
    assert uri.isascii() and " " not in uri
    assert uri == "kb://doc/notes/%C3%BCn%C3%AFcode%20name%20with%20space.md"
    assert kb.read_resource(uri).text.startswith("# Ü")
    hit = kb.search("unicode path body").results[0]
    assert hit.uri == uri


@pytest.mark.parametrize("path", [
    "../outside/secret.md", "notes/../../outside/secret.md", "/etc/passwd",
    "notes/plain.md\x00.txt", "notes\\plain.md", "C:/x.md", "", "notes/link.md",
    "notes/hard.md",  # hard-linked: two links
    "notes/pipe.md", "notes/missing.md",
])
def test_hostile_paths_are_refused_without_server_paths(kb: KnowledgeBase, path: str) -> None:
    with pytest.raises(PathRefused) as exc:
        kb.get_document(path)
    assert str(kb.settings.kb_path) not in str(exc.value)
    assert str(kb.settings.kb_path.parent) not in str(exc.value)


@pytest.mark.parametrize("encoded", [
    "%2e%2e%2foutside%2fsecret.md", "..%2Foutside%2Fsecret.md", "%2Fetc%2Fpasswd",
    "notes%2Fplain.md%00", "notes%5Cplain.md", "%ff%fe",
])
def test_percent_encoded_traversal_is_refused(kb: KnowledgeBase, encoded: str) -> None:
    with pytest.raises(PathRefused):
        kb.read_resource("kb://doc/" + encoded)


def test_fifo_read_does_not_hang(kb: KnowledgeBase) -> None:
    outcome: list[BaseException | None] = []

    def attempt() -> None:
        try:
            kb.get_document("notes/pipe.md")
            outcome.append(None)
        except BaseException as exc:  # noqa: BLE001
            outcome.append(exc)

    t = threading.Thread(target=attempt, daemon=True)
    t.start()
    t.join(timeout=10)
    assert not t.is_alive(), "reading a FIFO hung"
    assert isinstance(outcome[0], PathRefused)


def test_a_symlink_swapped_in_just_before_the_open_is_refused_by_the_handle(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "kb"
    write_files(root, {"a.md": "# A\n\nreal\n"})
    write_files(tmp_path, {"secret.md": "secret\n"})
    fs = LocalFileSystem(root)
    real_open = os.open

    def swap_then_open(path: str, flags: int, *a: object, **kw: object) -> int:
        if path == "a.md":  # an attacker swaps in a link the instant before the open
            (root / "a.md").unlink()
            os.symlink(tmp_path / "secret.md", root / "a.md")
        return real_open(path, flags, *a, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "open", swap_then_open)
    from kbmcp_adapters.parsers.registry import build_registry

    with pytest.raises(PathRefused) as refused:
        load_document("a.md", fs, build_registry(["md"]))
    assert refused.value.reason == "no such document"  # a client learns nothing more
    assert "symbolic link" in refused.value.detail  # the server's log does


def test_symlinked_folder_on_the_way_is_refused(tmp_path: Path) -> None:
    root = tmp_path / "kb"
    write_files(tmp_path, {"elsewhere/x.md": "# X\n"})
    root.mkdir()
    os.symlink(tmp_path / "elsewhere", root / "dir")
    from kbmcp_adapters.parsers.registry import build_registry

    with pytest.raises(PathRefused):
        load_document("dir/x.md", LocalFileSystem(root), build_registry(["md"]))


def test_narrowing_formats_keeps_rows_searchable_but_not_offered(
    own_kb: KnowledgeBase, open_kb: OpenKb
) -> None:
    narrowed = open_kb(own_kb.settings.kb_path, enabled_formats=("md",))
    hits = narrowed.search("telemetry appendix sensor calibration").results
    pdf_hit = next(h for h in hits if h.path == "papers/telemetry.pdf")
    assert pdf_hit.uri is None
    assert "papers/telemetry.pdf" not in narrowed.offered_paths()
    with pytest.raises(PathRefused):
        narrowed.read_resource(doc_uri("papers/telemetry.pdf"))
    checks = {f.check: f for f in narrowed.doctor().findings}
    assert checks["extension-not-enabled"].samples == ("papers/telemetry.pdf",)
    # an index run with the narrowed list keeps the rows too; --prune removes them
    narrowed.index()
    assert "papers/telemetry.pdf" in narrowed.indexed_paths()
    narrowed.index(prune=True)
    assert "papers/telemetry.pdf" not in narrowed.indexed_paths()


def test_null_sizes_stay_offered_and_one_run_fills_them(own_kb: KnowledgeBase) -> None:
    import sqlite3

    kb = own_kb
    (kb.settings.kb_path / "notes/later.md").unlink()  # only what was indexed
    with sqlite3.connect(kb.settings.sqlite_path) as conn:
        conn.execute("UPDATE documents SET size_bytes = NULL")
    assert "notes/big.md" in kb.offered_paths()  # unknown is offered, not refused
    checks = {f.check: f for f in kb.doctor().findings}
    assert checks["size-not-recorded"].count == 4
    assert "without re-embedding" in checks["size-not-recorded"].remedy
    s = kb.index()
    assert (s.chunks_embedded, s.sizes_backfilled) == (0, 4)
    assert "notes/big.md" in kb.offered_paths()  # 2 MiB: read in ranges (decision 0033)
    assert {f.check for f in kb.doctor().findings} == set()
