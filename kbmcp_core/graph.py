"""The connection graph: documents linked by their nearest-neighbour chunks, bounded, laid out
(``graph_layout``: the one force layout every drawing uses).

A pure algorithm over one question the adapters answer, "which offered documents hold the
chunks nearest to this document's chunks, and how near" (a ``Neighbours`` function). The
graph grows breadth-first from its seeds: at most ``fan_out`` neighbours per document, at
most ``depth`` hops from a seed, never below ``threshold`` cosine similarity, at most
``max_nodes`` documents, and only documents in ``offered``. Whatever a bound cut is
counted in ``truncated`` so a reader knows the picture is partial.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from kbmcp_core.errors import InvalidQuery
from kbmcp_core.graph_layout import force_layout

#: (neighbour document path, cosine similarity in [-1, 1]), best first, never the document itself.
Neighbours = Callable[[str], Sequence[tuple[str, float]]]

MAX_DEPTH = 4
MAX_FAN_OUT = 20
MAX_NODES = 500
DEFAULT_DEPTH = 2
DEFAULT_FAN_OUT = 5
DEFAULT_THRESHOLD = 0.3
DEFAULT_MAX_NODES = 100


@dataclass(frozen=True, slots=True)
class GraphBounds:
    depth: int = DEFAULT_DEPTH
    fan_out: int = DEFAULT_FAN_OUT
    threshold: float = DEFAULT_THRESHOLD
    max_nodes: int = DEFAULT_MAX_NODES

    def __post_init__(self) -> None:
        if not 0 <= self.depth <= MAX_DEPTH:
            raise InvalidQuery(f"depth must be between 0 and {MAX_DEPTH}, got {self.depth}")
        if not 1 <= self.fan_out <= MAX_FAN_OUT:
            raise InvalidQuery(f"fan_out must be between 1 and {MAX_FAN_OUT}, got {self.fan_out}")
        if not (math.isfinite(self.threshold) and -1.0 <= self.threshold <= 1.0):
            raise InvalidQuery(f"threshold must be between -1 and 1, got {self.threshold}")
        if not 1 <= self.max_nodes <= MAX_NODES:
            raise InvalidQuery(
                f"max_nodes must be between 1 and {MAX_NODES}, got {self.max_nodes}")

    def as_dict(self) -> dict[str, object]:
        return {"depth": self.depth, "fan_out": self.fan_out, "threshold": self.threshold,
                "max_nodes": self.max_nodes}


@dataclass(frozen=True, slots=True)
class GraphNode:
    path: str
    title: str
    uri: str | None
    depth: int
    seed: bool
    x: float = 0.0
    y: float = 0.0

    def as_dict(self) -> dict[str, object]:
        out: dict[str, object] = {"path": self.path, "title": self.title, "depth": self.depth,
                                  "seed": self.seed, "x": round(self.x, 1) + 0.0,
                                  "y": round(self.y, 1) + 0.0}
        if self.uri is not None:
            out["uri"] = self.uri
        return out


@dataclass(frozen=True, slots=True)
class GraphEdge:
    source: str
    target: str
    similarity: float

    def as_dict(self) -> dict[str, object]:
        return {"source": self.source, "target": self.target,
                "similarity": round(self.similarity, 4)}


@dataclass(frozen=True, slots=True)
class ConnectionGraph:
    nodes: tuple[GraphNode, ...]
    edges: tuple[GraphEdge, ...]
    bounds: GraphBounds
    #: what the bounds cut: neighbours past fan_out, documents past max_nodes
    truncated: Mapping[str, int] = field(default_factory=dict)
    #: how the graph was seeded, e.g. {"path": "a.md"} or {"query": "..."}
    seeded_by: Mapping[str, str] = field(default_factory=dict)

    @property
    def is_truncated(self) -> bool:
        return any(self.truncated.values())

    def as_dict(self) -> dict[str, object]:
        return {
            "nodes": [n.as_dict() for n in self.nodes],
            "edges": [e.as_dict() for e in self.edges],
            "bounds": self.bounds.as_dict(),
            "seeded_by": dict(self.seeded_by),
            "truncated": self.is_truncated,
            "truncation": {k: v for k, v in sorted(self.truncated.items()) if v},
        }


def build_graph(
    seeds: Sequence[str],
    neighbours: Neighbours,
    offered: Iterable[str],
    titles: Callable[[Sequence[str]], Mapping[str, str]],
    uri: Callable[[str], str | None],
    bounds: GraphBounds,
    seeded_by: Mapping[str, str] | None = None,
) -> ConnectionGraph:
    """Grow the graph breadth-first from ``seeds``; lay it out. Documents outside
    ``offered`` are never nodes, whatever ``neighbours`` returns."""
    allowed = set(offered)
    depth_of: dict[str, int] = {}
    for path in seeds:
        if path in allowed and path not in depth_of and len(depth_of) < bounds.max_nodes:
            depth_of[path] = 0
    seed_set = set(depth_of)
    cut_fan_out = cut_nodes = 0
    edges: dict[tuple[str, str], float] = {}
    frontier = list(depth_of)
    for level in range(bounds.depth):
        following: list[str] = []
        for path in frontier:
            near = [(p, s) for p, s in neighbours(path)
                    if p != path and p in allowed and s >= bounds.threshold]
            near.sort(key=lambda item: (-item[1], item[0]))
            if len(near) > bounds.fan_out:
                cut_fan_out += len(near) - bounds.fan_out
                near = near[:bounds.fan_out]
            for other, similarity in near:
                if other not in depth_of:
                    if len(depth_of) >= bounds.max_nodes:
                        cut_nodes += 1
                        continue
                    depth_of[other] = level + 1
                    following.append(other)
                key = (path, other) if path < other else (other, path)
                edges[key] = max(similarity, edges.get(key, -1.0))
        frontier = following
    order = sorted(depth_of, key=lambda p: (depth_of[p], p))
    names = titles(order)
    positions = force_layout(order, edges, [p for p in order if p in seed_set])
    nodes = tuple(
        GraphNode(p, names.get(p, p), uri(p), depth_of[p], p in seed_set, *positions[p])
        for p in order
    )
    return ConnectionGraph(
        nodes,
        tuple(GraphEdge(a, b, s) for (a, b), s in sorted(edges.items())),
        bounds,
        {"fan_out": cut_fan_out, "max_nodes": cut_nodes},
        dict(seeded_by or {}),
    )


__all__ = ["DEFAULT_DEPTH", "DEFAULT_FAN_OUT", "DEFAULT_MAX_NODES", "DEFAULT_THRESHOLD",
           "MAX_DEPTH", "MAX_FAN_OUT", "MAX_NODES", "ConnectionGraph", "GraphBounds",
           "GraphEdge", "GraphNode", "Neighbours", "build_graph"]
