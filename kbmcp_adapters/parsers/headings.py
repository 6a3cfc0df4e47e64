"""Heading clean-up shared by the parsers and the eval: raw Markdown heading -> plain text."""

from __future__ import annotations

import re

from kbmcp_core.models import is_text_name

__all__ = ["clean_heading", "normalise_heading", "title_from_path"]

# An ATX heading line's markers, for callers that pass the whole line.
_ATX_OPEN = re.compile(r"^[ \t]{0,3}#{1,6}(?:[ \t]+|$)")
_ATX_CLOSE = re.compile(r"[ \t]+#+[ \t]*$")
# A react.dev-style `{/*slug*/}` or a Pandoc/kramdown-style `{#slug}` at the end of a heading.
_TRAILING_ANCHOR = re.compile(r"\s*(?:\{/\*.*?\*/\}|\{#[^}]*\})\s*$")
_JSX_COMMENT = re.compile(r"\{/\*.*?\*/\}")
_CODE_SPAN = re.compile(r"(`+)(.+?)\1")
_PLACEHOLDER = re.compile("\x00(\\d+)\x00")
_IMAGE = re.compile(r"!\[([^\]]*)\]\([^)]*\)")
_LINK = re.compile(r"\[([^\]]*)\]\([^)]*\)")
_REF_LINK = re.compile(r"\[([^\]]*)\]\[[^\]]*\]")
_TAG = re.compile(r"<[^<>]*>")
_STRONG = re.compile(r"(\*\*|__)(?=\S)(.+?)(?<=\S)\1")
_STAR_EM = re.compile(r"(?<!\*)\*(?=[^\s*])(.+?)(?<=[^\s*])\*(?!\*)")
_UNDERSCORE_EM = re.compile(r"(?<![\w_])_(?=[^\s_])(.+?)(?<=[^\s_])_(?![\w_])")
_STRIKE = re.compile(r"~~(?=\S)(.+?)(?<=\S)~~")
_ESCAPE = re.compile(r"\\([\\`*_{}\[\]()#+\-.!<>|~])")
_SPACE = re.compile(r"\s+")
_STEM_SEPARATORS = re.compile(r"[-_]+")


def clean_heading(raw: str) -> str:
    """Reduce a raw heading to what a reader sees.

    Accepts the heading text or the whole ATX line (``## Title ##``). Drops a trailing
    ``{/*slug*/}`` or ``{#slug}`` anchor, code-span backticks (the code text stays, untouched
    by the other rules), emphasis and strike-through markers, link and image syntax (their
    text stays), HTML/JSX tags such as ``<Badge />`` and backslash escapes (the escaped
    character stays), then collapses whitespace.

    >>> clean_heading("### `useState(initialState)` {/*usestate*/}")
    'useState(initialState)'
    """
    text = raw
    if _ATX_OPEN.match(text):
        text = _ATX_CLOSE.sub("", _ATX_OPEN.sub("", text, count=1))
    text = _TRAILING_ANCHOR.sub("", text)
    spans: list[str] = []

    def protect(match: re.Match[str]) -> str:
        spans.append(match.group(2).strip())
        return f"\x00{len(spans) - 1}\x00"

    def protect_escape(match: re.Match[str]) -> str:
        spans.append(match.group(1))
        return f"\x00{len(spans) - 1}\x00"

    text = _CODE_SPAN.sub(protect, text)
    text = _ESCAPE.sub(protect_escape, text)
    text = _JSX_COMMENT.sub(" ", text)
    text = _IMAGE.sub(r"\1", text)
    text = _LINK.sub(r"\1", text)
    text = _REF_LINK.sub(r"\1", text)
    text = _TAG.sub("", text)
    text = _STRONG.sub(r"\2", text)
    text = _STAR_EM.sub(r"\1", text)
    text = _UNDERSCORE_EM.sub(r"\1", text)
    text = _STRIKE.sub(r"\1", text)
    text = _PLACEHOLDER.sub(lambda m: spans[int(m.group(1))], text)
    return _SPACE.sub(" ", text).strip()


def normalise_heading(heading: str) -> str:
    """The comparison key of a heading: cleaned, case-folded, whitespace collapsed."""
    return clean_heading(heading).casefold()


def title_from_path(path: str) -> str:
    """A readable title from a file name: stem with dashes/underscores as spaces; a text
    name keeps its qualifier (``README.Debian``, not another ``README``)."""
    name = path.replace("\\", "/").rsplit("/", 1)[-1]
    whole = is_text_name(name) or "." not in name.lstrip(".")
    stem = name if whole else name.rsplit(".", 1)[0]
    title = _SPACE.sub(" ", _STEM_SEPARATORS.sub(" ", stem)).strip()
    return title or name
