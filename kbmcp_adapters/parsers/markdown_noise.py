"""Markdown lines a reader never sees: link-reference definitions and HTML comments.

``[fetch]: https://developer.mozilla.org/...`` lines (link-reference definitions) and
``<!-- YAML added: v0.1.0 -->`` blocks (HTML comments: Node.js puts one under every API
heading) render as nothing, but read as text they are a list of URLs, version numbers and
pull-request links. Indexed as prose they become chunks of their own that rank for any
query naming an API (issue 25), and they dilute the embedding of the prose around them.

``blank_noise`` replaces those lines with empty ones, so that what is chunked, embedded and
weighed by keywords leaves them out, while every other line keeps its number (search hits
still point at the right lines of the file, which is never changed). Rules, outside fenced
code blocks only (code samples keep everything):

* a **link-reference definition** is a line ``[label]: destination "optional title"``
  (up to three spaces of indentation) that starts a block: the first line, or after a
  blank line, a heading or another definition. A footnote (``[^1]: text``) is prose and
  stays;
* an **HTML comment block** starts with ``<!--`` (up to three spaces of indentation) and
  ends on the first line that holds ``-->``: every line of it is blanked, as CommonMark
  renders none of it. A comment never closed is left as it is (it would otherwise hide the
  rest of the file);
* an **inline comment** ``<!-- ... -->`` inside a line of text is cut out of that line
  (not on lines with inline code, where ``<!--`` may be the subject of the text).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

__all__ = ["blank_noise"]

_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})(.*)$")
_LINK_DEFINITION = re.compile(
    r"^ {0,3}\[(?!\^)(?:[^\]\\\n]|\\.){1,999}\]:[ \t]*(?:<[^>\n]*>|\S+)"
    r"(?:[ \t]+(?:\"[^\"\n]*\"|'[^'\n]*'|\([^)\n]*\)))?[ \t]*$"
)
_COMMENT_OPEN = re.compile(r"^ {0,3}<!--")
_INLINE_COMMENT = re.compile(r"<!--.*?-->")
_ATX = re.compile(r"^ {0,3}#{1,6}(?:[ \t]|$)")


def blank_noise(lines: Sequence[str], first: int = 0) -> list[str]:
    """``lines`` with link-reference definitions and HTML comments from line ``first`` on
    replaced by empty lines (inline comments cut out of their line); see the module
    docstring. Lines before ``first`` (frontmatter) are returned as they are."""
    out = list(lines)
    if not any("<!--" in line or "]:" in line for line in lines[first:]):
        return out
    fence: str | None = None
    block_start = True  # a definition may start here (after a blank, a heading, a definition)
    i = first
    while i < len(out):
        line = out[i]
        match = _FENCE.match(line)
        if fence is not None:
            if (match and match.group(1)[0] == fence[0] and len(match.group(1)) >= len(fence)
                    and not match.group(2).strip()):
                fence = None
            i += 1
            block_start = True
            continue
        if match and not (match.group(1)[0] == "`" and "`" in match.group(2)):
            fence = match.group(1)
            i += 1
            continue
        if _COMMENT_OPEN.match(line):
            end = next((j for j in range(i, len(out))
                        if "-->" in (out[j][out[j].index("<!--") + 4:] if j == i else out[j])),
                       None)
            if end is not None:
                out[i : end + 1] = [""] * (end + 1 - i)
                i = end + 1
                block_start = True
                continue
        if block_start and _LINK_DEFINITION.match(line):
            out[i] = ""
            i += 1
            continue  # a definition may follow a definition
        if "<!--" in line and "`" not in line:
            line = out[i] = _INLINE_COMMENT.sub("", line)
        block_start = not line.strip() or bool(_ATX.match(line))
        i += 1
    return out
