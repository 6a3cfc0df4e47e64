"""Properties of client-supplied paths: ``kb://`` URIs and ``get_document`` paths.

A knowledge base sits next to a SECRET file and holds links to it (a symlink to the file,
an absolute symlink, a symlink to the folder around it, a symlink from a subfolder, a hard
link). Whatever path or URI a client sends (percent-encoding, ``%2e%2e``, ``%2f``, ``%00``,
backslashes, dots, control characters, Unicode, overlong or invalid UTF-8 sequences), the
answer is a document inside the root (offered, for a resource) with that document's own
text, or ``PathRefused`` / ``NotOffered`` — never the secret's bytes, never another error.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote, unquote

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kbmcp_adapters.app.knowledge_base import KnowledgeBase
from kbmcp_adapters.embedding.fastembed_embedder import FastEmbedEmbedder
from kbmcp_core.errors import InvalidRange, PathRefused
from kbmcp_core.reading import clean_request_path
from tests.property.support import any_text, budget, open_kb, write_tree

SECRET = "SECRET-LAUNCH-CODES-4242"
DOCS = {
    "a.md": "# A\n\nThe first page.\n",
    "sub/b.md": "# B\n\nA page in a folder.\n",
    "sub/deeper/c.md": "# C\n\nA page two folders down.\n",
    "日本語 ノート.md": "# ノート\n\n日本語のページ。\n",
    "100% done.md": "# Done\n\nA name with a percent sign.\n",
    "sp ace/x y.md": "# Spaces\n\nFolder and file names with spaces.\n",
    ".hidden.md": "# Hidden\n\nA dot-leading name.\n",
    "notes.txt": "plain text, a format that is not enabled\n",
}


@dataclass(frozen=True)
class Fixture:
    kb: KnowledgeBase
    root: Path
    outside: Path
    offered: frozenset[str]


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory, embedder: FastEmbedEmbedder
          ) -> Iterator[Fixture]:
    base = tmp_path_factory.mktemp("paths")
    outside = base / "outside"
    write_tree(outside, {"secret.md": f"# Secret\n\n{SECRET}\n",
                         "dir/secret.md": f"# Secret too\n\n{SECRET}\n",
                         "hard-secret.md": f"# Hard\n\n{SECRET}\n"})
    root = base / "kb"
    write_tree(root, DOCS)
    os.symlink("../outside/secret.md", root / "link.md")
    os.symlink(outside / "secret.md", root / "abs.md")
    os.symlink("../outside", root / "outlink")
    os.symlink("../../outside/secret.md", root / "sub" / "up.md")
    os.link(outside / "hard-secret.md", root / "hard.md")
    kb = open_kb(root, embedder)
    kb.index()
    offered = frozenset(kb.offered_paths())
    assert "a.md" in offered and "link.md" not in offered and "hard.md" not in offered
    yield Fixture(kb, root, outside, offered)
    kb.close()


# -- strategies -------------------------------------------------------------------------------
NAMES = (
    "a.md", "sub", "b.md", "deeper", "c.md", "日本語 ノート.md", "100% done.md", "sp ace",
    "x y.md", ".hidden.md", "notes.txt", "link.md", "abs.md", "outlink", "up.md", "hard.md",
    "secret.md", "hard-secret.md", "outside", "dir", "kb", "..", ".", "", "...", ".md",
    "a.md.", "A.MD", "a.md/", "a.md%00", "~", "$HOME", "*", "?",
)  # fmt: skip
JUNK = (
    "\x00", "\\", "..\\..", "\\..\\outside", "%2e%2e", "%2E%2e", "%2f", "%2F", "%5c", "%00",
    "%", "%2", "%zz", "%ff", "%c0%ae", "%c0%af", "%e0%80%ae", "%ed%a0%80", "%f4%90%80%80",
    "%25", "%252e%252e", "\n", "\r", "\t", "\x1b", "\x7f", "\u202e", "\ufeff", "\u2215",
    "\uff0f", "\u2024\u2024", "．．", "C:", "c:\\", "//", "/./", "file:",
)  # fmt: skip
SEPS = ("/", "/", "/", "//", "/./", "\\", "%2f", "%2F", "%5c", "")


def segment(roots: tuple[str, ...]) -> st.SearchStrategy[str]:
    return st.one_of(
        st.sampled_from(NAMES),
        st.sampled_from(NAMES),
        st.sampled_from(JUNK),
        st.sampled_from(roots),
        any_text(8),
    )


def raw_paths(roots: tuple[str, ...]) -> st.SearchStrategy[str]:
    """Paths as a client might type them, built from real names, traversal and junk."""
    prefix = st.sampled_from(("", "", "", "/", "./", "../", "../../", "~/", "\\\\", *roots))
    parts = st.lists(st.tuples(segment(roots), st.sampled_from(SEPS)), min_size=1, max_size=6)
    return st.builds(
        lambda p, xs: p + "".join(s + sep for s, sep in xs).removesuffix("/"), prefix, parts
    )


@st.composite
def encoded(draw: st.DrawFn, raw: str, twice: bool = True) -> str:
    """``raw`` with a random choice of its characters percent-encoded (either hex case),
    some encoded twice when ``twice``."""
    out = []
    hows = ("keep", "keep", "keep", "upper", "lower", *(("twice",) if twice else ()))
    for ch in raw:
        how = draw(st.sampled_from(hows))
        if how == "keep":
            out.append(ch)
            continue
        enc = quote(ch, safe="", errors="surrogatepass")
        enc = enc.lower() if how == "lower" else enc
        out.append(enc.replace("%", "%25") if how == "twice" else enc)
    return "".join(out)


def uris(roots: tuple[str, ...]) -> st.SearchStrategy[str]:
    scheme = st.sampled_from(("kb://doc/", "kb://doc/", "kb://doc/", "kb://doc/", "kb://doc",
                              "kb://doc//", "KB://doc/", "kb://topic/", "kb://other/",
                              "file:///", "kb:/doc/", ""))
    return st.builds(lambda s, p: s + p, scheme, raw_paths(roots).flatmap(encoded))


# -- the oracle -------------------------------------------------------------------------------
def assert_inside_and_own_text(w: Fixture, path: str, text: str, *, part: bool = False
                               ) -> None:
    """``path`` names a regular file inside the root, reached through no link, with one
    hard link, and ``text`` is that file's own text (with ``part``: some of its lines)."""
    assert SECRET not in text
    full = os.path.join(os.path.realpath(w.root), *path.split("/"))
    assert os.path.realpath(full) == full, f"{path!r} passes through a link"
    st_ = os.lstat(full)
    assert st_.st_nlink == 1
    with open(full, encoding="utf-8") as f:
        own = f.read().removeprefix("\ufeff")
    assert text in own if part else text == own


def assert_clean_refusal(w: Fixture, exc: PathRefused) -> None:
    assert exc.code in ("path_refused", "not_servable")
    assert str(w.root.parent) not in exc.reason, exc.reason  # no server path in the reason


def check_uri(w: Fixture, uri: str) -> None:
    try:
        body = w.kb.read_resource(uri)
    except PathRefused as exc:
        assert_clean_refusal(w, exc)
        return
    except InvalidRange:  # a fragment that names no lines the document has (decision 0033)
        assert uri.startswith("kb://doc/") and "#" in uri, uri
        return
    assert SECRET not in body.text
    if uri.startswith("kb://topic/"):
        return
    assert uri.startswith("kb://doc/"), uri
    base, hashmark, _ = uri.partition("#")
    path = clean_request_path(unquote(base.removeprefix("kb://doc/"), errors="strict"))
    assert path in w.offered, f"{uri!r} read {path!r}, which is not offered"
    assert_inside_and_own_text(w, path, body.text, part=bool(hashmark))


def check_path(w: Fixture, path: str) -> None:
    try:
        doc = w.kb.get_document(path)
    except PathRefused as exc:
        assert_clean_refusal(w, exc)
        return
    assert_inside_and_own_text(w, doc.path, doc.content)


def roots_of(w: Fixture) -> tuple[str, ...]:
    return (str(w.root), str(w.outside), str(w.root) + "/../outside")


# -- properties -------------------------------------------------------------------------------
# The strategies need the fixture's real folder names, so the examples are drawn inside.
@settings(max_examples=budget(700))
@given(data=st.data())
def test_any_resource_uri_reads_an_offered_document_or_is_refused(
    world: Fixture, data: st.DataObject
) -> None:
    check_uri(world, data.draw(uris(roots_of(world)), label="uri"))


@settings(max_examples=budget(700))
@given(data=st.data())
def test_any_get_document_path_reads_inside_the_root_or_is_refused(
    world: Fixture, data: st.DataObject
) -> None:
    check_path(world, data.draw(raw_paths(roots_of(world)), label="path"))


@settings(max_examples=budget(200))
@given(data=st.data())
def test_every_offered_document_reads_under_any_percent_encoding(
    world: Fixture, data: st.DataObject
) -> None:
    """Decoding happens before the checks: an encoded URI of an offered path always works."""
    path = data.draw(st.sampled_from(sorted(world.offered)), label="path")
    uri = "kb://doc/" + data.draw(encoded(path, twice=False), label="encoded")
    body = world.kb.read_resource(uri)
    assert_inside_and_own_text(world, path, body.text)


@settings(max_examples=budget(150))
@given(data=st.data())
def test_dot_and_empty_segments_do_not_change_which_document_is_read(
    world: Fixture, data: st.DataObject
) -> None:
    path = data.draw(st.sampled_from(sorted(world.offered)), label="path")
    noisy = "/".join(
        data.draw(st.sampled_from(("", ".", "./.", "")), label="noise") + "/" + part
        for part in path.split("/")
    ).lstrip("/")
    doc = world.kb.get_document(noisy)
    assert doc.path == path
    assert_inside_and_own_text(world, path, doc.content)


@pytest.mark.parametrize("path", ["link.md", "abs.md", "outlink/secret.md", "sub/up.md",
                                  "hard.md", "../outside/secret.md", "sub/../../outside/secret.md",
                                  "outlink/dir/secret.md"])
def test_each_route_to_the_secret_is_refused(world: Fixture, path: str) -> None:
    for uri in ("kb://doc/" + path, "kb://doc/" + quote(path, safe="")):
        with pytest.raises(PathRefused):
            world.kb.read_resource(uri)
    with pytest.raises(PathRefused):
        world.kb.get_document(path)
