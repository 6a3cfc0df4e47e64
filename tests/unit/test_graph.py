"""The connection graph's pure algorithm: bounds, offer, truncation, layout, DOT and SVG."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pytest

from kbmcp_core.errors import InvalidQuery
from kbmcp_core.graph import GraphBounds, build_graph
from kbmcp_core.graph_render import to_dot, to_svg

#: a little world: a is near b, c, d, e; b near f; f near g (a chain), x is excluded
NEAR: dict[str, list[tuple[str, float]]] = {
    "a": [("b", 0.9), ("c", 0.8), ("x", 0.95), ("d", 0.5), ("e", 0.2)],
    "b": [("a", 0.9), ("f", 0.7)],
    "c": [("a", 0.8)],
    "d": [("a", 0.5)],
    "f": [("b", 0.7), ("g", 0.6)],
    "g": [("f", 0.6)],
    "x": [("a", 0.95), ("b", 0.94)],
}
OFFERED = ["a", "b", "c", "d", "e", "f", "g"]


def titles(paths: Sequence[str]) -> Mapping[str, str]:
    return {p: f"Title {p.upper()}" for p in paths}


def graph(seeds: Sequence[str] = ("a",), **bounds: float) -> dict[str, object]:
    g = build_graph(list(seeds), lambda p: NEAR.get(p, []), OFFERED, titles,
                    lambda p: f"kb://doc/{p}", GraphBounds(**bounds))  # type: ignore[arg-type]
    return g.as_dict()


def node_paths(data: dict[str, object]) -> list[str]:
    return [n["path"] for n in data["nodes"]]  # type: ignore[attr-defined]


def test_a_document_the_offer_excludes_is_never_a_node_even_as_the_nearest() -> None:
    data = graph(depth=3, fan_out=10, threshold=0.0)
    assert "x" not in node_paths(data)
    assert all("x" not in (e["source"], e["target"]) for e in data["edges"])  # type: ignore[attr-defined]
    assert graph(["x"])["nodes"] == []  # an excluded seed gives nothing


def test_depth_bounds_how_far_the_graph_reaches() -> None:
    assert node_paths(graph(depth=0)) == ["a"]
    assert node_paths(graph(depth=1, threshold=0.4)) == ["a", "b", "c", "d"]
    assert node_paths(graph(depth=2, threshold=0.4)) == ["a", "b", "c", "d", "f"]
    assert "g" in node_paths(graph(depth=3, threshold=0.4))


def test_threshold_drops_weak_links_and_fan_out_cuts_are_reported() -> None:
    data = graph(depth=1, threshold=0.6, fan_out=1)
    assert node_paths(data) == ["a", "b"]
    assert data["truncated"] is True
    assert data["truncation"] == {"fan_out": 1}  # c (0.8) was cut, d and e were below 0.6
    edge = data["edges"][0]  # type: ignore[index]
    assert (edge["source"], edge["target"], edge["similarity"]) == ("a", "b", 0.9)
    assert graph(depth=1, threshold=0.6, fan_out=5)["truncated"] is False


def test_max_nodes_caps_the_graph_and_says_how_many_it_left_out() -> None:
    data = graph(depth=2, threshold=0.0, max_nodes=3)
    assert len(node_paths(data)) == 3
    assert data["truncation"]["max_nodes"] >= 2  # type: ignore[index]


def test_nodes_carry_title_uri_depth_and_the_seed_mark() -> None:
    nodes = graph(depth=1, threshold=0.75)["nodes"]
    assert nodes == [
        {"path": "a", "title": "Title A", "depth": 0, "seed": True, "x": 0.0, "y": 0.0,
         "uri": "kb://doc/a"},
        {**nodes[1], "path": "b", "title": "Title B", "depth": 1, "seed": False,  # type: ignore[index]
         "uri": "kb://doc/b"},
        {**nodes[2], "path": "c", "title": "Title C", "depth": 1, "seed": False,  # type: ignore[index]
         "uri": "kb://doc/c"},
    ]


def test_the_layout_is_deterministic_and_spreads_the_nodes() -> None:
    first, second = graph(depth=3, threshold=0.0), graph(depth=3, threshold=0.0)
    assert first == second
    points = {(n["x"], n["y"]) for n in first["nodes"]}  # type: ignore[attr-defined]
    assert len(points) == len(first["nodes"])  # type: ignore[arg-type]


@pytest.mark.parametrize("bad", [{"depth": 9}, {"fan_out": 0}, {"threshold": 2.0},
                                 {"max_nodes": 0}, {"threshold": float("nan")}])
def test_bounds_out_of_range_are_refused_with_the_name(bad: dict[str, float]) -> None:
    with pytest.raises(InvalidQuery, match=next(iter(bad))):
        GraphBounds(**bad)  # type: ignore[arg-type]


HOSTILE = '<img src=x onerror="alert(1)"> & "quoted"'


def hostile_graph() -> object:
    return build_graph(["a"], lambda p: NEAR.get(p, []), OFFERED,
                       lambda ps: {p: HOSTILE for p in ps}, lambda p: None,
                       GraphBounds(depth=1, threshold=0.7, fan_out=1))


def test_svg_is_deterministic_and_never_carries_a_title_as_markup() -> None:
    svg = to_svg(hostile_graph())  # type: ignore[arg-type]
    assert svg == to_svg(hostile_graph())  # type: ignore[arg-type]
    assert svg.startswith("<svg ") and svg.rstrip().endswith("</svg>")
    assert "<img" not in svg and "&lt;img src=x" in svg
    assert svg.count("<circle") == 2 and svg.count("<line") == 1
    assert "truncated: fan_out 1" in svg
    import xml.dom.minidom

    xml.dom.minidom.parseString(svg)  # well-formed


def test_dot_quotes_titles_and_labels_edges() -> None:
    dot = to_dot(hostile_graph())  # type: ignore[arg-type]
    assert dot.startswith("graph connections {")
    assert '"a" -- "b" [label="0.90"];' in dot
    assert 'label="<img src=x onerror=\\"alert(1)\\"> & \\"quoted\\""' in dot
    assert "// truncated (fan_out: 1)" in dot
