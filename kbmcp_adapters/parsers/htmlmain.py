"""Where a generated documentation page keeps its content: landmarks, navigation, layout tables.

Documentation generators (DocBook, Doxygen, Sphinx, javadoc, the libxml/libxslt site
stylesheets) wrap the text a reader came for in navigation bars, sidebars and, on older
sites, tables used for layout. ``htmlpage`` asks this module three questions while it walks
a page (decision 0029 says why these rules and not an article extractor):

* ``content_root``: the page's one ``<main>`` (or ``role="main"``) element, if it has
  exactly one with text; otherwise the ``<body>``.
* ``is_navigation``: an element that is navigation by its role (``navigation``,
  ``search``, ``complementary``) or by a class or id word (``nav*``, ``menu``,
  ``sidebar``, ``sphinxsidebar``, ``breadcrumb(s)``, ``topnav``, ``subnav``, ``skipnav``,
  ``footer``).
* ``is_layout_table`` / ``layout_cells``: a table is a layout table when it holds a
  heading, a list, a table, a form or preformatted text, or a cell of its own holds two
  paragraphs;
  its cells are then read as blocks, in order, and a cell that is mostly link text
  (at least three links, half its text or more) with no heading is a sidebar and dropped.
  A data table stays one line per row (``htmlpage._table``).
* ``link_lists``: a list, table or division that is all links (at least
  ``MIN_LIST_LINKS`` of them, their text ``LINKED_SHARE`` of its text or more) with no
  heading or preformatted text: a table of contents, a back-of-book index (texinfo's
  ``index-cp`` tables and their "Jump to" letters, Sphinx's ``genindex``, DocBook's
  ``toc``), a list of related pages. It is navigation too, but kept in the text a read
  serves (a reader may follow it); ``htmlpage`` leaves it out of what is searched
  (decision 0062).

Each look is bounded by the element's own subtree; ``htmlpage`` stops unfolding layout
tables ``MAX_LAYOUT_DEPTH`` deep, so nested tables cannot make the walk quadratic.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = [
    "MAX_LAYOUT_DEPTH",
    "content_root",
    "is_layout_table",
    "link_lists",
    "is_navigation",
    "layout_cells",
]

#: Layout tables nested deeper than this are read as data tables (one line per row).
MAX_LAYOUT_DEPTH = 8
#: ARIA roles whose element is never the page's content.
_NAV_ROLES = frozenset({"navigation", "search", "complementary"})
#: Class or id words of navigation, as generators name it.
_NAV_WORDS = frozenset(
    {
        "menu", "menubar", "sidebar", "sphinxsidebar", "sphinxsidebarwrapper", "breadcrumb",
        "breadcrumbs", "topnav", "bottomnav", "subnav", "sidenav", "skipnav", "footer",
    }
)  # fmt: skip
#: Elements whose class or id is looked at (inline elements never are).
_CONTAINERS = frozenset(
    {"div", "table", "td", "th", "tr", "ul", "ol", "dl", "section", "p", "header", "footer"}
)
#: What makes a table cell hold a page's blocks rather than one value.
_LAYOUT_MARKERS = ("table", "h1", "h2", "h3", "h4", "h5", "h6", "ul", "ol", "dl", "pre",
                   "form", "blockquote")  # fmt: skip
_HEADINGS = ("h1", "h2", "h3", "h4", "h5", "h6")
#: Elements that may hold a list of links (``is_link_list``).
_LISTS = frozenset({"ul", "ol", "dl", "table", "div"})
#: A link list has at least this many links ...
MIN_LIST_LINKS = 3
#: ... and this share of its text (spaces and punctuation aside) is link text.
LINKED_SHARE = 0.75
#: What a link list may not hold: it would be a page's content.
_CONTENT_MARKERS = (*_HEADINGS, "pre")
_WORD = re.compile(r"\w+")
_WORD_SPLIT = re.compile(r"[\s_]+")
_SPACE = re.compile(r"\s+")


def content_root(soup: Any, mains: int) -> Any:
    """The page's only ``<main>`` / ``role="main"`` element with text, else its body;
    ``mains`` is how many such elements the tree builder saw (none: no search)."""
    if mains == 1:
        main = soup.find("main") or soup.find(attrs={"role": "main"})
        if main is not None and main.get_text(strip=True):
            return main
    return soup.find("body") or soup


def is_navigation(node: Any, name: str) -> bool:
    """Whether ``node`` (a Tag named ``name``) is navigation by its role, class or id."""
    if name not in _CONTAINERS:
        return False
    role = node.get("role")
    if isinstance(role, str) and role.strip().lower() in _NAV_ROLES:
        return True
    classes = node.get("class") or []
    names = [*classes] if isinstance(classes, list) else [str(classes)]
    ident = node.get("id")
    if isinstance(ident, str):
        names.append(ident)
    for value in names:
        for word in _WORD_SPLIT.split(str(value).lower()):
            if word.startswith("nav") or word in _NAV_WORDS or _dashed_nav(word):
                return True
    return False


def _dashed_nav(word: str) -> bool:
    """``side-nav``, ``nav-path``, ``menu-main``: a dashed word with a navigation part."""
    return "-" in word and any(
        part.startswith("nav") or part in _NAV_WORDS for part in word.split("-")
    )


def is_layout_table(table: Any) -> bool:
    """Whether ``table`` lays out a page (its own cells hold blocks) or holds data."""
    if str(table.get("role") or "").lower() in ("presentation", "none"):
        return True
    if table.find(_LAYOUT_MARKERS) is not None:  # in a cell of its own or a nested table's
        return True
    if table.find(("p", "div")) is None:
        return False
    for cell in layout_cells(table, drop_sidebars=False):
        if len(cell.find_all(("p", "div"), limit=2)) >= 2:
            return True
    return False


def layout_cells(table: Any, drop_sidebars: bool = True) -> list[Any]:
    """The table's own cells in reading order (not a nested table's); with
    ``drop_sidebars``, without the cells that are mostly links and have no heading."""
    cells: list[Any] = []
    for row in _own_rows(table):
        for cell in _tags(row):
            if cell.name in ("td", "th") and not (drop_sidebars and _is_sidebar(cell)):
                cells.append(cell)
    return cells


def link_lists(root: Any) -> frozenset[int]:
    """The ``id`` of every element under ``root`` that is a list of links: a table of
    contents, an index, a list of related pages (module docstring). One pass, children
    before their parent, so a page of nested lists costs one look at each element."""
    from bs4.element import NavigableString, Tag

    found: set[int] = set()
    # per element: [links, linked letters, letters, holds a heading or pre]
    stats: dict[int, list[int]] = {}
    stack: list[tuple[Any, bool]] = [(root, False)]
    while stack:
        node, done = stack.pop()
        if not done:
            stack.append((node, True))
            stack.extend((child, False) for child in node.children if isinstance(child, Tag))
            continue
        name = (node.name or "").lower()
        mine = [0, 0, 0, int(name in _CONTENT_MARKERS)]
        for child in node.children:
            if type(child) is NavigableString:
                mine[2] += _letters(str(child))
            elif isinstance(child, Tag):
                below = stats.pop(id(child), None)
                if below is not None:
                    mine = [a + b for a, b in zip(mine, below, strict=True)]
        if name == "a" and node.get("href") is not None:
            mine[0] += 1
            mine[1] = mine[2]
        links, linked, letters, content = mine
        if (name in _LISTS and links >= MIN_LIST_LINKS and not content
                and letters > 0 and linked >= LINKED_SHARE * letters):
            found.add(id(node))
        stats[id(node)] = mine
    return frozenset(found)


def _letters(text: str) -> int:
    """How many word characters ``text`` holds (spaces and punctuation aside)."""
    return sum(len(word) for word in _WORD.findall(text))


def _own_rows(table: Any) -> list[Any]:
    rows: list[Any] = []
    for child in _tags(table):
        if child.name == "tr":
            rows.append(child)
        elif child.name in ("thead", "tbody", "tfoot"):
            rows.extend(row for row in _tags(child) if row.name == "tr")
    return rows


def _is_sidebar(cell: Any) -> bool:
    if cell.find(_HEADINGS) is not None:
        return False
    links = cell.find_all("a", href=True)
    if len(links) < 3:
        return False
    total = len(_SPACE.sub("", cell.get_text()))
    linked = sum(len(_SPACE.sub("", link.get_text())) for link in links)
    return total > 0 and linked * 2 >= total


def _tags(node: Any) -> list[Any]:
    from bs4.element import Tag

    return [child for child in node.children if isinstance(child, Tag)]
