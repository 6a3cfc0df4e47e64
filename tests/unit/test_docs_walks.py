"""The walks of ``docs/architecture.md`` name code that exists, and the decision index lists
each record once with the record's own status (decision 0050).

- every ``file:function`` step of the walks resolves: the file is there (under
  ``kbmcp_adapters/`` unless it starts with ``kbmcp_core/`` or ``kbmcp_cli/``) and defines
  the function, class or method named (``Class.method``, ``outer.inner``);
- ``docs/decisions/README.md`` has one row per record, in order, whose status column is the
  record's one ``Status:`` line: ``accepted``, ``amended by NNNN[, NNNN]`` or ``superseded
  by NNNN``, naming records that exist.
"""

from __future__ import annotations

import ast
import re
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ARCHITECTURE = ROOT / "docs" / "architecture.md"
DECISIONS = ROOT / "docs" / "decisions"

_STEP = re.compile(r"`((?:[\w]+/)*\w+\.py):([\w.]+)`")
_STATUS = re.compile(r"^Status: (accepted|superseded by \d{4}|amended by \d{4}(?:, \d{4})*)$")


def walk_steps(text: str) -> list[tuple[str, str]]:
    """Each ``file:function`` code span of the walks section."""
    section = re.split(r"## \w+ walks through the code", text, maxsplit=1)[1].split("\n## ", 1)[0]
    return _STEP.findall(section)


def source_of(step_file: str) -> Path:
    if step_file.startswith(("kbmcp_core/", "kbmcp_cli/")):
        return ROOT / step_file
    return ROOT / "kbmcp_adapters" / step_file


@cache
def _tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"))


def defines(path: Path, dotted: str) -> bool:
    """True when ``path`` defines ``dotted``: a top-level function or class, then each next
    part a function or class anywhere inside the one before."""
    scope: ast.AST = _tree(path)
    for depth, name in enumerate(dotted.split(".")):
        nodes = (ast.iter_child_nodes(scope) if depth == 0 else ast.walk(scope))
        found = next((n for n in nodes if isinstance(
            n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) and n.name == name), None)
        if found is None:
            return False
        scope = found
    return True


def test_every_step_of_the_walks_names_code_that_exists() -> None:
    steps = walk_steps(ARCHITECTURE.read_text(encoding="utf-8"))
    assert len(steps) > 50  # the four walks, not an empty match
    missing = [f"{file}:{name}" for file, name in steps
               if not source_of(file).is_file() or not defines(source_of(file), name)]
    assert missing == [], "docs/architecture.md's walks name code that is not there"


def test_the_walk_check_catches_a_deleted_function() -> None:
    assert defines(ROOT / "kbmcp_core" / "search.py", "Searcher")
    assert not defines(ROOT / "kbmcp_core" / "search.py", "Searcher.gone_since")
    assert walk_steps("## Three walks through the code\n1. `app/x.py:f` and `kbmcp_core/y.py:"
                      "C.m`\n## Next\n`z.py:g`") == [("app/x.py", "f"), ("kbmcp_core/y.py", "C.m")]


def record_status(path: Path) -> str:
    """The record's one ``Status:`` line (and no second status format in it)."""
    lines = path.read_text(encoding="utf-8").splitlines()
    statuses = [line for line in lines if re.match(r"^[-*\s]*status\**:", line, re.I)]
    assert len(statuses) == 1, f"{path.name}: {statuses}"
    match = _STATUS.match(statuses[0])
    assert match is not None, f"{path.name}: {statuses[0]!r}"
    return match[1]


def test_the_decision_index_lists_each_record_once_with_its_status() -> None:
    records = sorted(p.name for p in DECISIONS.glob("[0-9][0-9][0-9][0-9]-*.md"))
    rows = re.findall(r"^\| \[(\d{4})\]\(([^)]+)\) \| ([^|]+) \| (?:\\\||[^|])+ \|$",
                      (DECISIONS / "README.md").read_text(encoding="utf-8"), re.M)
    assert [file for _, file, _ in rows] == records  # each once, in order
    numbers = {name[:4] for name in records}
    for number, file, status in rows:
        assert file.startswith(number)
        assert status.strip() == record_status(DECISIONS / file), file
        assert set(re.findall(r"\d{4}", status)) <= numbers, file
