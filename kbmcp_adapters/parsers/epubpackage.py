"""An EPUB's structure, read from its own files: the package document (OPF) named by
``META-INF/container.xml``, its metadata title, its reading order (spine), and the
table of contents (the EPUB 3 navigation document, else the EPUB 2 NCX).

* XML is parsed by lxml with entities left unresolved and no DTD or network access; a
  file that is not well formed is read as lxml recovers it.
* Paths are the archive's: ``href`` values are resolved against the file that holds
  them and percent-decoded; a fragment (``#id``) is dropped.
* A book whose spine documents are listed in ``META-INF/encryption.xml`` is refused as
  DRM-protected (fonts obfuscated the IDPF way are listed there too and do not count).
"""

from __future__ import annotations

import posixpath
import re
import zipfile
from dataclasses import dataclass
from html.entities import name2codepoint
from typing import Any
from urllib.parse import unquote

from kbmcp_core.errors import ParseError

__all__ = ["Package", "html_entities", "read_package", "xml_root"]

_OPF = "{http://www.idpf.org/2007/opf}"
_DC_TITLE = "{http://purl.org/dc/elements/1.1/}title"
_CONTAINER = "{urn:oasis:names:tc:opendocument:xmlns:container}"
_NCX = "{http://www.daisy.org/z3986/2005/ncx/}"
_XHTML = "{http://www.w3.org/1999/xhtml}"
_OPS_TYPE = "{http://www.idpf.org/2007/ops}type"
_ENC = "{http://www.w3.org/2001/04/xmlenc#}"
#: A named entity reference other than XML's own five.
_ENTITY = re.compile(rb"&(?!(?:amp|lt|gt|quot|apos);)([A-Za-z][A-Za-z0-9]{1,31});")
#: Spine media types read as chapters.
_CHAPTER_TYPES = frozenset({"application/xhtml+xml", "text/html", "image/svg+xml"})


@dataclass(frozen=True, slots=True)
class Package:
    """What the package document says about the book."""

    title: str | None
    #: archive paths of the spine documents, in reading order
    spine: tuple[str, ...]
    #: archive path -> (table-of-contents depth, title) of its shallowest entry
    toc: dict[str, tuple[int, str]]


def xml_root(data: bytes) -> Any:
    """``data`` parsed as XML (safely, recovering from errors), or None when nothing is
    left of it."""
    from lxml import etree

    parser = etree.XMLParser(
        recover=True, resolve_entities=False, no_network=True, load_dtd=False, huge_tree=False
    )
    try:
        return etree.fromstring(data, parser)
    except etree.XMLSyntaxError:
        return None


def html_entities(data: bytes) -> bytes:
    """HTML's named entities (``&nbsp;``, ``&eacute;``) as numeric references: XHTML
    chapters use them, and an XML parser that loads no DTD would drop them."""

    def numeric(match: re.Match[bytes]) -> bytes:
        code = name2codepoint.get(match.group(1).decode("ascii"))
        return b"&#%d;" % code if code is not None else match.group(0)

    return _ENTITY.sub(numeric, data) if b"&" in data else data


def _text(element: Any) -> str:
    return " ".join("".join(element.itertext()).split())


def _resolve(base: str, href: str) -> str:
    path = unquote(href.split("#", 1)[0])
    return posixpath.normpath(posixpath.join(posixpath.dirname(base), path)).lstrip("/")


def read_package(archive: zipfile.ZipFile) -> Package:
    """The book's package, or ``ParseError`` when the archive holds no EPUB package."""
    names = set(archive.namelist())
    container = (
        xml_root(archive.read("META-INF/container.xml"))
        if ("META-INF/container.xml" in names)
        else None
    )
    if container is None:
        raise ParseError("not a readable EPUB (no META-INF/container.xml)")
    rootfile = next(container.iter(_CONTAINER + "rootfile", "rootfile"), None)
    opf_path = unquote(rootfile.get("full-path", "")) if rootfile is not None else ""
    opf = xml_root(archive.read(opf_path)) if opf_path in names else None
    if opf is None:
        raise ParseError(f"not a readable EPUB (package document {opf_path[:80]!r} missing)")
    title_element = next(opf.iter(_DC_TITLE), None)
    title = _text(title_element) if title_element is not None else ""
    manifest: dict[str, tuple[str, str, str]] = {}
    for item in opf.iter(_OPF + "item", "item"):
        href = item.get("href")
        if href:
            manifest[item.get("id", "")] = (
                _resolve(opf_path, href),
                item.get("media-type", ""),
                item.get("properties", ""),
            )
    spine_element = next(opf.iter(_OPF + "spine", "spine"), None)
    spine: list[str] = []
    if spine_element is not None:
        for ref in spine_element.iter(_OPF + "itemref", "itemref"):
            path, media_type, _ = manifest.get(ref.get("idref", ""), ("", "", ""))
            if path and (media_type in _CHAPTER_TYPES or not media_type):
                spine.append(path)
    _refuse_drm(archive, names, set(spine))
    toc: dict[str, tuple[int, str]] = {}
    nav = next((path for path, _, props in manifest.values() if "nav" in props.split()), None)
    if nav is not None and nav in names:
        toc = _nav_toc(archive.read(nav), nav)
    if not toc and spine_element is not None:
        ncx = manifest.get(spine_element.get("toc", ""), ("", "", ""))[0] or next(
            (p for p, t, _ in manifest.values() if t == "application/x-dtbncx+xml"), ""
        )
        if ncx in names:
            toc = _ncx_toc(archive.read(ncx), ncx)
    return Package(title or None, tuple(spine), toc)


def _refuse_drm(archive: zipfile.ZipFile, names: set[str], spine: set[str]) -> None:
    if "META-INF/encryption.xml" not in names:
        return
    root = xml_root(archive.read("META-INF/encryption.xml"))
    if root is None:
        return
    for reference in root.iter(_ENC + "CipherReference"):
        if unquote(reference.get("URI", "")).lstrip("/") in spine:
            raise ParseError("encrypted EPUB (DRM); not indexed")


def _keep(toc: dict[str, tuple[int, str]], path: str, depth: int, title: str) -> None:
    if title and (path not in toc or depth < toc[path][0]):
        toc[path] = (depth, title)


def _nav_toc(data: bytes, nav_path: str) -> dict[str, tuple[int, str]]:
    """Entries of the navigation document's ``toc`` nav (else its first nav)."""
    root = xml_root(data)
    if root is None:
        return {}
    navs = list(root.iter(_XHTML + "nav", "nav"))
    nav = next((n for n in navs if "toc" in (n.get(_OPS_TYPE) or "").split()), None)
    nav = nav if nav is not None else (navs[0] if navs else None)
    toc: dict[str, tuple[int, str]] = {}
    if nav is None:
        return toc
    for link in nav.iter(_XHTML + "a", "a"):
        href = link.get("href")
        if not href or href.startswith(("http:", "https:", "mailto:")):
            continue
        depth = sum(1 for a in link.iterancestors() if a.tag in (_XHTML + "li", "li"))
        _keep(toc, _resolve(nav_path, href), max(depth, 1), _text(link))
    return toc


def _ncx_toc(data: bytes, ncx_path: str) -> dict[str, tuple[int, str]]:
    root = xml_root(data)
    toc: dict[str, tuple[int, str]] = {}
    if root is None:
        return toc
    for point in root.iter(_NCX + "navPoint", "navPoint"):
        content = next(point.iterchildren(_NCX + "content", "content"), None)
        label = next(point.iterchildren(_NCX + "navLabel", "navLabel"), None)
        if content is None or label is None or not content.get("src"):
            continue
        depth = sum(1 for a in point.iterancestors() if a.tag in (_NCX + "navPoint", "navPoint"))
        _keep(toc, _resolve(ncx_path, content.get("src", "")), depth + 1, _text(label))
    return toc
