"""Release numbers: in a query, and as the name of a release's own notes (issue 42; decision
0056, tenth part).

A folder of release notes (git's ``RelNotes/2.1.0.txt``, a ``NEWS`` split per release,
``CHANGES-1.9.txt``) holds one file per release, and they all talk about the same program:
its options, its commands, what changed in them. A question that names its release ("what
happened to my old PGP 2 keys after upgrading to gnupg 2.1") says which of those files it
asks, and no leg reads that: the model sees two near-identical notes, and the keyword leg
finds "2.1" in every note of 2.1.x that mentions it (and, on SQLite, at the end of
"2.2.1"). So when a query names a release and a candidate document's *file name* is that
release's number, the document's best place becomes the first: the notes of the release
the question names come first. Numbers are compared folded ("v2.0", "2.0" and "2.0.0" are
one release; "2.1" is not "2.1.10"), and the place keeps its score (the scores stay in
order, decision 0056: one score per hit; the chunk's own fused score is its
``fused_score``). A file name without a release number, or with two, names no release;
the flag is decided from the legs, before any of this, and cannot move.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

#: A release number as people write it: "2.0", "v1.9", "3.12.1" (a run of digits with at
#: least one dot; the keyword leg writes it both ways, ``store/lexical.py``).
RELEASE = re.compile(r"(?<![\w.])v?[0-9]+(?:\.[0-9]+)+(?!\w|\.[0-9])", re.IGNORECASE)
#: What a file name's extension looks like (left out before its release is read).
_EXTENSION = re.compile(r"\.[A-Za-z][A-Za-z0-9]*$")


def folded(release: str) -> str:
    """``release`` as one spelling: no "v", no trailing ".0" ("v2.0.0" → "2")."""
    parts = release.lower().lstrip("v").split(".")
    while len(parts) > 1 and parts[-1].strip("0") == "":
        parts.pop()
    return ".".join(parts)


def named(text: str) -> set[str]:
    """The release numbers ``text`` names, folded."""
    return {folded(found) for found in RELEASE.findall(text)}


def release_of(path: str) -> str | None:
    """The release a document's file name is the notes of (``gnupg/2.1.0.txt``,
    ``RelNotes/v2.0.md``, ``CHANGES-1.9.txt``): its one release number, folded; None when
    the name holds none or more than one."""
    name = _EXTENSION.sub("", path.rsplit("/", 1)[-1])
    found = RELEASE.findall(name)
    return folded(found[0]) if len(found) == 1 else None


def _number(release: str) -> tuple[int, ...]:
    return tuple(int(part) for part in release.split("."))


def _folder(path: str) -> str:
    return path.rsplit("/", 1)[0] if "/" in path else ""


def announced_release_first(ranked: Sequence[tuple[int, float]], paths: Mapping[int, str],
                            texts: Mapping[int, str]) -> list[tuple[int, float]]:
    """``ranked`` with the notes of a release announced by an earlier release's notes just
    ahead of them: when a document's best chunk is release X's notes and names a later
    release Y ("Backward compatibility notes (for Git 2.0)" in 1.8.2's notes) whose notes
    are a candidate below it in the same folder (one program's notes sit together; another
    program's 5.0 is not this one's), Y's best chunk takes X's place and X's comes one
    place lower (``texts``: each chunk's text). One pass, each place keeping its score."""
    best: dict[str, int] = {}
    for i, (cid, _) in enumerate(ranked):
        path = paths.get(cid)
        if path is not None:
            best.setdefault(path, i)
    by_release = {(_folder(path), r): i for path, i in best.items()
                  if (r := release_of(path)) is not None}
    order = list(range(len(ranked)))
    moved: set[int] = set()
    for path, i in sorted(best.items(), key=lambda item: item[1]):
        own = release_of(path)
        if own is None or i in moved:
            continue
        beside = [(r, by_release.get((_folder(path), r)))
                  for r in named(texts.get(ranked[i][0], ""))]
        later = sorted(j for r, j in beside if j is not None and j > i and j not in moved
                       and _number(r) > _number(own))
        for j in later:
            order.remove(j)
            order.insert(order.index(i), j)
            moved.add(j)
    return [(ranked[i][0], ranked[at][1]) for at, i in enumerate(order)]


def named_release_first(ranked: Sequence[tuple[int, float]], paths: Mapping[int, str],
                        query: str) -> list[tuple[int, float]]:
    """``ranked`` with the best chunk of each document whose file name is a release
    ``query`` names moved to the front (in their order), every other chunk after them in
    its order; each place keeps its score. Unchanged when the query names no release or no
    candidate is its notes."""
    asked = named(query)
    if not asked:
        return list(ranked)
    first: list[int] = []
    seen: set[str] = set()
    for i, (cid, _) in enumerate(ranked):
        path = paths.get(cid)
        if path is not None and path not in seen:
            seen.add(path)
            if release_of(path) in asked:
                first.append(i)
    if not first:
        return list(ranked)
    moved = set(first)
    order = first + [i for i in range(len(ranked)) if i not in moved]
    return [(ranked[i][0], ranked[at][1]) for at, i in enumerate(order)]
