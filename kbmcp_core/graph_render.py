"""The connection graph as Graphviz DOT and as a standalone SVG drawn at the coordinates of
its one layout (``graph_layout``), nodes coloured by folder, with a legend."""

from __future__ import annotations

from xml.sax.saxutils import escape, quoteattr

from kbmcp_core.graph import ConnectionGraph

_MARGIN = 24.0
_LABEL_CHARS = 32


def to_dot(graph: ConnectionGraph) -> str:
    """An undirected DOT graph: one node per document (label = title), edges labelled with
    their similarity; seeds drawn bold."""
    lines = ["graph connections {", '  node [shape=box, fontname="sans-serif"];']
    for node in graph.nodes:
        attrs = [f"label={_dot_string(node.title)}", f"tooltip={_dot_string(node.path)}"]
        if node.seed:
            attrs.append("style=bold")
        lines.append(f"  {_dot_string(node.path)} [{', '.join(attrs)}];")
    for edge in graph.edges:
        lines.append(f"  {_dot_string(edge.source)} -- {_dot_string(edge.target)} "
                     f'[label="{edge.similarity:.2f}"];')
    if graph.is_truncated:
        cut = ", ".join(f"{k}: {v}" for k, v in sorted(graph.truncated.items()) if v)
        lines.append(f"  // truncated ({cut})")
    lines.append("}")
    return "\n".join(lines) + "\n"


def _dot_string(text: str) -> str:
    cleaned = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", " ").replace("\r", " ")
    return f'"{cleaned}"'


#: The folder colours (as /ui's app.css draws them); the folders past the last share it.
FOLDER_COLOURS = ("#0969da", "#1a7f37", "#bc4c00", "#8250df", "#bf3989", "#1b7c83",
                  "#9a6700", "#6e7781")
#: Labels drawn without pointing: the seeds and this many of the most linked documents.
_LABELS = 16
#: A label's estimated box at 12 px sans-serif: width per character, height.
_CHAR_W, _LINE_H = 7.0, 14.0


def folder_of(path: str) -> str:
    """A document's first folder (a topic group), ``(top level)`` without one."""
    head, sep, _ = path.partition("/")
    return head + "/" if sep else "(top level)"


def folder_legend(graph: ConnectionGraph) -> tuple[dict[str, int], list[tuple[int, str, int]]]:
    """Each folder's colour (most documents first) and the legend's entries (colour,
    label, count): the folders past the palette share its last colour as "other folders"."""
    counts: dict[str, int] = {}
    for node in graph.nodes:
        counts[folder_of(node.path)] = counts.get(folder_of(node.path), 0) + 1
    order = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    last = len(FOLDER_COLOURS) - 1
    colour = {folder: min(i, last) for i, (folder, _) in enumerate(order)}
    legend: list[tuple[int, str, int]] = []
    for folder, count in order:
        if colour[folder] == last and legend and legend[-1][0] == last:
            legend[-1] = (last, "other folders", legend[-1][2] + count)
        else:
            legend.append((colour[folder], folder, count))
    return colour, legend


def _label(title: str) -> str:
    return title if len(title) <= _LABEL_CHARS else title[:_LABEL_CHARS - 1] + "…"


def _labelled(graph: ConnectionGraph) -> set[str]:
    """The documents whose label is drawn: by priority (seeds, then the most linked), never
    two overlapping; the others keep their title as a tooltip."""
    degree = {n.path: 0 for n in graph.nodes}
    for e in graph.edges:
        degree[e.source] += 1
        degree[e.target] += 1
    room = _LABELS + sum(n.seed for n in graph.nodes)
    shown: list[tuple[float, float, float, float]] = []
    out: set[str] = set()
    for n in sorted(graph.nodes, key=lambda n: (not n.seed, -degree[n.path], n.path)):
        if len(out) >= room:
            break
        half = len(_label(n.title)) * _CHAR_W / 2 + 3
        box = (n.x - half, n.y - 12 - _LINE_H, n.x + half, n.y - 12 + 4)
        if not any(box[0] < o[2] and o[0] < box[2] and box[1] < o[3] and o[1] < box[3]
                   for o in shown):
            shown.append(box)
            out.add(n.path)
    return out


def to_svg(graph: ConnectionGraph) -> str:
    """A standalone SVG of the graph at its layout positions (``graph_layout``), nodes
    coloured by folder with a legend under the drawing, sized to hold every node, label and
    the legend. Titles are escaped text (never markup); the same graph gives the same bytes."""
    colour, legend = folder_legend(graph)
    labelled = _labelled(graph)
    half = {n.path: len(_label(n.title)) * _CHAR_W / 2 for n in graph.nodes}
    xs = [x for n in graph.nodes for x in (n.x - half[n.path], n.x + half[n.path])]
    ys = [y for n in graph.nodes for y in (n.y - 12 - _LINE_H, n.y + 9)]
    left, top = (min(xs) - _MARGIN, min(ys) - _MARGIN) if xs else (0.0, 0.0)
    width = max(max(xs) - left + _MARGIN if xs else 200.0, 320.0)
    entries = [(c, f"{label} ({count})") for c, label, count in legend]
    entries.append((-1, "where the graph starts"))
    rows: list[list[tuple[float, int, str]]] = [[]]
    x = 0.0
    for c, text in entries:
        w = 22 + len(text) * _CHAR_W
        if x and x + w > width - 16:
            rows.append([])
            x = 0.0
        rows[-1].append((x, c, text))
        x += w + 18
    drawing = (max(ys) + _MARGIN / 2 - top) if ys else 40.0
    height = drawing + 22 * len(rows) + 12 + (20 if graph.is_truncated else 0)
    at = {n.path: n for n in graph.nodes}
    out = [
        '<svg xmlns="http://www.w3.org/2000/svg" '
        f'viewBox="{left:.1f} {top:.1f} {width:.1f} {height:.1f}" '
        f'width="{width:.0f}" height="{height:.0f}" font-family="sans-serif" font-size="12">',
        "<title>kb-mcp connection graph</title>",
        f'<rect x="{left:.1f}" y="{top:.1f}" width="{width:.1f}" height="{height:.1f}" '
        'fill="#ffffff"/>',
        '<g stroke="#8a94a6">',
    ]
    for e in graph.edges:
        a, b = at[e.source], at[e.target]
        stroke = 0.5 + 3.0 * max(0.0, e.similarity)
        out.append(f'<line x1="{a.x:.1f}" y1="{a.y:.1f}" x2="{b.x:.1f}" y2="{b.y:.1f}" '
                   f'stroke-width="{stroke:.2f}"><title>{e.similarity:.2f}</title></line>')
    out.append("</g>")
    for n in graph.nodes:
        fill = FOLDER_COLOURS[colour[folder_of(n.path)]]
        ring = ' stroke="#24292f" stroke-width="3"' if n.seed else ""
        text = (f'<text x="{n.x:.1f}" y="{n.y - 12:.1f}" text-anchor="middle" fill="#24292f" '
                f"data-path={quoteattr(n.path)}>{escape(_label(n.title))}</text>"
                if n.path in labelled else "")
        out.append(
            f"<g><title>{escape(n.title)} — {escape(n.path)}</title>"
            f'<circle cx="{n.x:.1f}" cy="{n.y:.1f}" r="{9 if n.seed else 6}" fill="{fill}"{ring}/>'
            f"{text}</g>"
        )
    out.append('<g class="legend" fill="#24292f">')
    for r, row in enumerate(rows):
        y = top + drawing + 22 * r + 10
        for x, c, text in row:
            swatch = (f'fill="{FOLDER_COLOURS[c]}"' if c >= 0
                      else 'fill="none" stroke="#24292f" stroke-width="3"')
            out.append(f'<rect x="{left + 12 + x:.1f}" y="{y - 10:.1f}" width="12" height="12" '
                       f'rx="6" {swatch}/><text x="{left + 30 + x:.1f}" y="{y:.1f}">'
                       f"{escape(text)}</text>")
    out.append("</g>")
    if graph.is_truncated:
        cut = ", ".join(f"{k} {v}" for k, v in sorted(graph.truncated.items()) if v)
        out.append(f'<text x="{left + 8:.1f}" y="{top + height - 8:.1f}" fill="#9a6700">'
                   f"truncated: {escape(cut)}</text>")
    out.append("</svg>")
    return "\n".join(out) + "\n"


__all__ = ["FOLDER_COLOURS", "folder_legend", "folder_of", "to_dot", "to_svg"]
