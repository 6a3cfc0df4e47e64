"""The connection graph's one layout (``kbmcp_core.graph_layout``), which the tool's x/y, the
CLI's SVG and the pages draw: the same graph at the same place every time, no two documents
on each other, unrelated clusters kept apart; and the SVG drawn from it, with its legend,
inside the size it declares."""

from __future__ import annotations

import math
import re
import xml.dom.minidom
from itertools import combinations

from kbmcp_core.graph import ConnectionGraph, GraphBounds, build_graph
from kbmcp_core.graph_layout import MIN_GAP, force_layout
from kbmcp_core.graph_render import to_svg

#: two clusters that share no link: a ring of six guides, a star of five ops notes
RING = [f"guides/g{i}.md" for i in range(6)]
STAR = [f"ops/o{i}.md" for i in range(5)]
EDGES = {**{(RING[i], RING[(i + 1) % 6]): 0.8 for i in range(6)},
         **{(STAR[0], STAR[i]): 0.6 for i in range(1, 5)}}


def a_big_world(n: int = 300) -> tuple[list[str], dict[tuple[str, str], float]]:
    """``n`` documents, each linked to two earlier ones (a fixed pattern, no randomness)."""
    order = [f"f{i % 7}/d{i}.md" for i in range(n)]
    edges = {}
    for i in range(1, n):
        for j in {(i * 7) % i, (i * 13 + 5) % i}:
            edges[(order[j], order[i])] = 0.3 + (i % 5) / 10
    return order, edges


def test_the_same_graph_gives_the_same_coordinates_and_the_first_seed_the_origin() -> None:
    order, edges = a_big_world(120)
    first, second = force_layout(order, edges, [order[3]]), force_layout(order, edges, [order[3]])
    assert first == second
    assert first[order[3]] == (0.0, 0.0)
    assert force_layout([], {}) == {}
    assert force_layout(["alone.md"], {}) == {"alone.md": (0.0, 0.0)}


def test_no_two_documents_are_on_each_other() -> None:
    for order, edges in (a_big_world(300), (RING + STAR, EDGES),
                         (["a", "b", "c"], {("a", "b"): 1.0, ("a", "c"): 1.0, ("b", "c"): 1.0})):
        at = force_layout(order, edges)
        closest = min(math.dist(at[a], at[b]) for a, b in combinations(order, 2))
        assert closest >= MIN_GAP - 1e-6, closest


def test_two_unconnected_clusters_lie_farther_apart_than_the_documents_inside_each() -> None:
    at = force_layout(RING + STAR, EDGES)
    between = min(math.dist(at[a], at[b]) for a in RING for b in STAR)
    inside = max(math.dist(at[a], at[b]) for group in (RING, STAR)
                 for a, b in combinations(group, 2))
    assert between > inside, (between, inside)


def the_graph(seeds: list[str], titles: dict[str, str] | None = None) -> ConnectionGraph:
    near: dict[str, list[tuple[str, float]]] = {}
    for (a, b), s in EDGES.items():
        near.setdefault(a, []).append((b, s))
        near.setdefault(b, []).append((a, s))
    return build_graph(seeds, lambda p: near.get(p, []), RING + STAR,
                       lambda ps: {p: (titles or {}).get(p, f"Notes on {p}") for p in ps},
                       lambda p: f"kb://doc/{p}", GraphBounds(depth=4, threshold=0.0))


def test_the_tool_s_coordinates_are_the_layout_s() -> None:
    graph = the_graph([RING[0], STAR[0]])
    at = force_layout(RING + STAR, EDGES, [RING[0], STAR[0]])
    for node in graph.nodes:
        assert (node.x, node.y) == at[node.path]


def test_the_svg_has_a_legend_and_everything_fits_the_size_it_declares() -> None:
    long_title = {RING[2]: "A title long enough to be cut short in the drawing, surely"}
    svg = to_svg(the_graph([RING[0], STAR[0]], long_title))
    root = xml.dom.minidom.parseString(svg).documentElement
    assert root is not None
    x0, y0, w, h = (float(v) for v in root.getAttribute("viewBox").split())
    assert (float(root.getAttribute("width")), float(root.getAttribute("height"))) == \
        (round(w), round(h))
    legend = [t.firstChild.data for g in root.getElementsByTagName("g")  # type: ignore[union-attr]
              if g.getAttribute("class") == "legend" for t in g.getElementsByTagName("text")]
    assert legend == ["guides/ (6)", "ops/ (5)", "where the graph starts"]
    for circle in root.getElementsByTagName("circle"):
        cx, cy, r = (float(circle.getAttribute(k)) for k in ("cx", "cy", "r"))
        assert x0 <= cx - r and cx + r <= x0 + w and y0 <= cy - r and cy + r <= y0 + h
    for text in root.getElementsByTagName("text"):
        x, y = float(text.getAttribute("x")), float(text.getAttribute("y"))
        chars = len(text.firstChild.data)  # type: ignore[union-attr]
        half = chars * 7 / 2 if text.getAttribute("text-anchor") == "middle" else 0
        right = x + (half or chars * 7)
        assert x0 <= x - half and right <= x0 + w and y0 <= y - 12 and y <= y0 + h, \
            text.toxml()
    # the two seeds are ringed; the colours are the folders' (the legend's swatches)
    fills = set(re.findall(r'<circle [^>]*fill="(#[0-9a-f]{6})"', svg))
    assert len(fills) == 2 and svg.count('stroke-width="3"/>') == 2 + 1  # + the legend's
