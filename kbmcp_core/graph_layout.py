"""The connection graph's one layout, by force: what the tool's ``x``/``y``, the CLI's SVG
and the pages (/ui, the MCP App view) all draw.

Each connected group of documents is laid out on its own (Fruchterman-Reingold: linked
documents pull, near documents push apart, the moves shrink as the layout cools), then the
groups are packed in rows, the largest first, ``GROUP_GAP`` apart, so unrelated clusters
never tangle. The push reaches ``2 * SPRING`` only (the grid variant of the algorithm: each
document meets the documents of its own and the eight cells around it), so a step costs
about one pass over the documents, not over every pair: 500 documents lay out in well under
a second of pure Python. A last pass keeps every two documents ``MIN_GAP`` apart.

Deterministic: a group starts on a sunflower spiral in breadth-first order from its most
linked document, nudged by a ``random.Random(SEED)``; the same graph always gives the same
coordinates. The first seed sits at the origin.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping, Sequence

#: The length a link pulls its two documents to (layout units; the SVG draws them as px).
SPRING = 90.0
#: The room between two unconnected groups: more than a small group is wide.
GROUP_GAP = 3 * SPRING
#: The least distance between two documents' centres after the layout.
MIN_GAP = 36.0
#: The random nudges' seed: the same graph, the same picture.
SEED = 40
#: Force steps for a group of n: many for a few documents, fewer (each costlier) for many.
MAX_STEPS, MIN_STEPS = 300, 60
#: Passes that push apart two documents closer than ``MIN_GAP`` before the whole widens.
SPREAD_PASSES = 20
_GOLDEN = math.pi * (3.0 - math.sqrt(5.0))

Point = tuple[float, float]
#: (first document's index, second's, similarity)
_Link = tuple[int, int, float]


def force_layout(order: Sequence[str], edges: Mapping[tuple[str, str], float],
                 seeds: Sequence[str] = ()) -> dict[str, Point]:
    """Every document of ``order`` at its place (in whatever order they come); ``edges``:
    (a, b) -> similarity; ``seeds``: the first one present sits at the origin."""
    if not order:
        return {}
    order = sorted(set(order))  # the same documents in any order: the same picture
    index = {p: i for i, p in enumerate(order)}
    links = sorted((min(index[a], index[b]), max(index[a], index[b]), s)
                   for (a, b), s in edges.items() if a in index and b in index and a != b)
    groups = _groups(len(order), links)
    pos: list[Point] = [(0.0, 0.0)] * len(order)
    boxes = []
    for members in groups:
        local = {m: j for j, m in enumerate(members)}
        inner = [(local[a], local[b], s) for a, b, s in links if a in local]
        placed = _spread(_laid_out(len(members), inner))
        xs, ys = [p[0] for p in placed], [p[1] for p in placed]
        x0, y0 = min(xs), min(ys)
        boxes.append((members, [(x - x0, y - y0) for x, y in placed],
                      max(xs) - x0, max(ys) - y0))
    area = sum((w + GROUP_GAP) * (h + GROUP_GAP) for _, _, w, h in boxes)
    row_width = max(boxes[0][2], math.sqrt(area) * 1.4)
    x = y = row_height = 0.0
    for members, placed, w, h in boxes:
        if x > 0 and x + w > row_width:
            x, y, row_height = 0.0, y + row_height + GROUP_GAP, 0.0
        for m, (px, py) in zip(members, placed, strict=True):
            pos[m] = (x + px, y + py)
        x += w + GROUP_GAP
        row_height = max(row_height, h)
    first = next((index[s] for s in seeds if s in index), 0)
    ox, oy = pos[first]
    return {p: (pos[i][0] - ox, pos[i][1] - oy) for i, p in enumerate(order)}


def _groups(n: int, links: Sequence[_Link]) -> list[list[int]]:
    """The connected groups, the largest first (then by their first document)."""
    root = list(range(n))

    def find(i: int) -> int:
        while root[i] != i:
            root[i] = root[root[i]]
            i = root[i]
        return i

    for a, b, _ in links:
        root[find(a)] = find(b)
    by_root: dict[int, list[int]] = {}
    for i in range(n):
        by_root.setdefault(find(i), []).append(i)
    return sorted(by_root.values(), key=lambda g: (-len(g), g[0]))


def _start(n: int, links: Sequence[_Link]) -> list[list[float]]:
    """A sunflower spiral, filled breadth-first from the most linked document, so linked
    documents start near each other; nudged a little by the seeded generator."""
    near: list[list[int]] = [[] for _ in range(n)]
    for a, b, _ in links:
        near[a].append(b)
        near[b].append(a)
    hub = max(range(n), key=lambda i: (len(near[i]), -i))
    visit, seen = [hub], {hub}
    for i in visit:
        for j in sorted(near[i], key=lambda j: (-len(near[j]), j)):
            if j not in seen:
                seen.add(j)
                visit.append(j)
    visit += [i for i in range(n) if i not in seen]
    rng = random.Random(SEED)
    pos = [[0.0, 0.0] for _ in range(n)]
    for rank, i in enumerate(visit):
        r, theta = SPRING * 0.6 * math.sqrt(rank), rank * _GOLDEN
        pos[i] = [r * math.cos(theta) + rng.uniform(-1, 1),
                  r * math.sin(theta) + rng.uniform(-1, 1)]
    return pos


def _laid_out(n: int, links: Sequence[_Link]) -> list[Point]:
    """One connected group by force (Fruchterman-Reingold with a cut-off grid, cooling)."""
    if n == 1:
        return [(0.0, 0.0)]
    k, reach = SPRING, 2 * SPRING
    pos = _start(n, links)
    heat = k * math.sqrt(n) / 2
    steps = max(MIN_STEPS, min(MAX_STEPS, round(400_000 / (n * n))))
    cool = (1.0 / heat) ** (1.0 / steps)  # down to one unit on the last step
    for _ in range(steps):
        move = [[0.0, 0.0] for _ in range(n)]
        for i, j in _near_pairs(pos, reach):
            dx, dy = pos[i][0] - pos[j][0], pos[i][1] - pos[j][1]
            d2 = dx * dx + dy * dy
            if d2 < 0.01:
                dx, dy, d2 = (i - j) * 0.1, 0.1, ((i - j) * 0.1) ** 2 + 0.01
            push = k * k / d2
            move[i][0] += dx * push
            move[i][1] += dy * push
            move[j][0] -= dx * push
            move[j][1] -= dy * push
        for a, b, similarity in links:
            dx, dy = pos[a][0] - pos[b][0], pos[a][1] - pos[b][1]
            pull = math.hypot(dx, dy) / k * (0.5 + max(0.0, similarity))
            move[a][0] -= dx * pull
            move[a][1] -= dy * pull
            move[b][0] += dx * pull
            move[b][1] += dy * pull
        for i in range(n):
            mx, my = move[i]
            d = math.hypot(mx, my) or 1.0
            step = min(d, heat) / d
            pos[i][0] += mx * step
            pos[i][1] += my * step
        heat *= cool
    return [(x, y) for x, y in pos]


def _near_pairs(pos: Sequence[Sequence[float]], reach: float) -> list[tuple[int, int]]:
    """Every two documents closer than ``reach`` (and some a little farther): each meets
    those of its own grid cell and of the cells after it."""
    cells: dict[tuple[int, int], list[int]] = {}
    for i, (x, y) in enumerate(pos):
        cells.setdefault((math.floor(x / reach), math.floor(y / reach)), []).append(i)
    pairs = []
    for (cx, cy), here in cells.items():
        for a, i in enumerate(here):
            pairs += [(i, j) for j in here[a + 1:]]
        for ox, oy in ((1, -1), (1, 0), (1, 1), (0, 1)):
            there = cells.get((cx + ox, cy + oy))
            if there:
                pairs += [(i, j) for i in here for j in there]
    return pairs


def _spread(pos: list[Point]) -> list[Point]:
    """The layout with no two documents closer than ``MIN_GAP``: each two too close pushed
    apart (a few passes), then, if any still are, the whole widened."""
    points = [list(p) for p in pos]
    for _ in range(SPREAD_PASSES):
        crowded = False
        for i, j in _near_pairs(points, MIN_GAP):
            dx, dy = points[j][0] - points[i][0], points[j][1] - points[i][1]
            d = math.hypot(dx, dy)
            if d >= MIN_GAP:
                continue
            crowded = True
            if d < 1e-6:  # two on one point: apart along a line of their own
                dx, dy, d = math.cos(i + j), math.sin(i + j), 1.0
            half = (MIN_GAP - d) / 2 / d
            points[i][0] -= dx * half
            points[i][1] -= dy * half
            points[j][0] += dx * half
            points[j][1] += dy * half
        if not crowded:
            return [(x, y) for x, y in points]
    closest = min((math.hypot(points[i][0] - points[j][0], points[i][1] - points[j][1])
                   for i, j in _near_pairs(points, MIN_GAP)), default=MIN_GAP)
    scale = MIN_GAP / max(closest, 1e-3) if closest < MIN_GAP else 1.0
    return [(x * scale, y * scale) for x, y in points]


__all__ = ["GROUP_GAP", "MIN_GAP", "SEED", "SPRING", "force_layout"]
