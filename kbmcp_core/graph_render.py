"""The connection graph as Graphviz DOT and as a standalone SVG drawn from its own layout."""

from __future__ import annotations

from xml.sax.saxutils import escape, quoteattr

from kbmcp_core.graph import ConnectionGraph

_MARGIN = 60.0
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


def to_svg(graph: ConnectionGraph) -> str:
    """A standalone SVG of the graph at its layout positions. Titles are escaped text (never
    markup); the same graph always gives the same bytes."""
    if graph.nodes:
        xs = [n.x for n in graph.nodes]
        ys = [n.y for n in graph.nodes]
        left, top = min(xs) - _MARGIN * 2, min(ys) - _MARGIN
        width, height = max(xs) - left + _MARGIN * 2, max(ys) - top + _MARGIN
    else:
        left, top, width, height = 0.0, 0.0, 200.0, 80.0
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
        fill = "#1f6feb" if n.seed else "#57606a"
        label = n.title if len(n.title) <= _LABEL_CHARS else n.title[:_LABEL_CHARS - 1] + "…"
        out.append(
            f'<g><title>{escape(n.path)}</title>'
            f'<circle cx="{n.x:.1f}" cy="{n.y:.1f}" r="{9 if n.seed else 6}" fill="{fill}"/>'
            f'<text x="{n.x:.1f}" y="{n.y - 12:.1f}" text-anchor="middle" fill="#24292f" '
            f"data-path={quoteattr(n.path)}>{escape(label)}</text></g>"
        )
    if graph.is_truncated:
        cut = ", ".join(f"{k} {v}" for k, v in sorted(graph.truncated.items()) if v)
        out.append(f'<text x="{left + 8:.1f}" y="{top + height - 8:.1f}" fill="#9a6700">'
                   f"truncated: {escape(cut)}</text>")
    out.append("</svg>")
    return "\n".join(out) + "\n"


__all__ = ["to_dot", "to_svg"]
