"""The docs that describe the code stay true: each claim below is read from the doc and
checked against the code, so a move, a new error or a new tool code without a doc update
fails here.

- the error tree drawn in ``kbmcp_core/errors.py``'s docstring is the class tree;
- ``docs/architecture.md``'s table names every folder and module of the three packages,
  each in its own folder's row, and no module that is not there;
- ``kbmcp_adapters.__all__`` is the library API the docs show;
- ``docs/mcp.md``'s table of error codes is the set of codes the tools can answer;
- the Makefile's test tiers cover every test folder once, and ``make test`` runs them all.
"""

from __future__ import annotations

import ast
import inspect
import json
import re
from pathlib import Path

import kbmcp_core.errors as errors_module
from kbmcp_core.errors import KbError

ROOT = Path(__file__).resolve().parents[2]
ARCHITECTURE = ROOT / "docs" / "architecture.md"


# -- the error tree ------------------------------------------------------------------------------
_TREE_LINE = re.compile(r"^(?P<lead>[ │├└─]*)(?P<name>[A-Z]\w*)(\s|$)")


def drawn_tree() -> dict[str, str | None]:
    """Each class the docstring draws -> the class drawn as its parent (None: the root)."""
    doc = errors_module.__doc__ or ""
    parents: dict[str, str | None] = {}
    stack: list[tuple[int, str]] = []  # (column, name) of the open ancestors
    for line in doc.splitlines():
        match = _TREE_LINE.match(line)
        if match is None or (not parents and match["name"] != "KbError"):
            continue
        column = len(match["lead"])
        while stack and stack[-1][0] >= column:
            stack.pop()
        parents[match["name"]] = stack[-1][1] if stack else None
        stack.append((column, match["name"]))
    return parents


def error_classes() -> dict[str, type[KbError]]:
    return {name: cls for name, cls in vars(errors_module).items()
            if inspect.isclass(cls) and issubclass(cls, KbError)
            and cls.__module__ == errors_module.__name__}


def test_the_drawn_error_tree_is_the_class_tree() -> None:
    drawn = drawn_tree()
    classes = error_classes()
    assert sorted(drawn) == sorted(classes), "errors.py's docstring tree is out of date"
    actual = {name: (None if cls is KbError else cls.__bases__[0].__name__)
              for name, cls in classes.items()}
    assert drawn == actual
    assert all(len(cls.__bases__) == 1 for cls in classes.values())


def test_the_tree_reader_sees_nesting() -> None:
    assert drawn_tree()["VectorsUnreachable"] == "VectorsUnreadable"
    assert drawn_tree()["InvalidQuery"] == "KbError"


# -- the architecture table ------------------------------------------------------------------
def table_rows(text: str) -> dict[str, list[str]]:
    """First cell (without backticks) -> the row's cells, for every table row of the doc
    whose first cell is code (the tree's table: folder | what it holds | modules)."""
    rows: dict[str, list[str]] = {}
    for line in text.splitlines():
        if line.startswith("| `"):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            rows[cells[0].strip("`")] = cells
    return rows


def folders_and_modules() -> dict[str, set[str]]:
    """Each folder the table must have a row for -> the names its row must give: every
    ``.py`` file below it (``__init__.py`` aside) by its path inside the folder, and every
    package folder inside it as ``name/``."""
    folders = [ROOT / "kbmcp_core", ROOT / "kbmcp_cli"] + sorted(
        d for d in (ROOT / "kbmcp_adapters").iterdir()
        if d.is_dir() and d.name != "__pycache__" and any(d.rglob("*.py")))
    wanted: dict[str, set[str]] = {}
    for folder in folders:
        names = {p.relative_to(folder).as_posix() for p in folder.rglob("*.py")
                 if p.name != "__init__.py" and "__pycache__" not in p.parts}
        names |= {f"{p.parent.relative_to(folder).as_posix()}/"
                  for p in folder.rglob("__init__.py") if p.parent != folder}
        wanted[f"{folder.relative_to(ROOT).as_posix()}/"] = names
    return wanted


_NAMED = re.compile(r"`([\w/]+\.py|\w+/)`")


def test_architecture_names_every_folder_and_module_in_its_row() -> None:
    rows = table_rows(ARCHITECTURE.read_text(encoding="utf-8"))
    problems = []
    for folder, modules in folders_and_modules().items():
        row = rows.get(folder)
        if row is None or len(row) < 3:
            problems.append(f"{folder}: no row with a modules column in the table")
            continue
        named = set(_NAMED.findall(row[2]))
        problems += [f"{folder}: {m} is not named in its row" for m in sorted(modules - named)]
        problems += [f"{folder}: its row names {m}, which is not there"
                     for m in sorted(named - modules)]
    assert problems == [], "docs/architecture.md's table is out of date:\n" + "\n".join(problems)


def test_the_table_names_no_folder_that_is_gone() -> None:
    rows = table_rows(ARCHITECTURE.read_text(encoding="utf-8"))
    package_rows = [r for r in rows if r.startswith(("kbmcp_core", "kbmcp_cli", "kbmcp_adapters/"))]
    assert sorted(package_rows) == sorted(folders_and_modules())


# -- the library API -------------------------------------------------------------------------
def test_the_adapters_package_exports_exactly_the_documented_api() -> None:
    import kbmcp_adapters

    assert kbmcp_adapters.__all__ == [
        "KnowledgeBase", "bootstrap", "open_collections", "open_knowledge_base", "settings_for"]
    for name in kbmcp_adapters.__all__:
        assert callable(getattr(kbmcp_adapters, name))


# -- the MCP error codes ---------------------------------------------------------------------
#: KbError classes no tool call lets out, and why (each must still be a class of the tree).
NEVER_A_TOOL_ANSWER = {
    "KbError": "the root: only its subclasses are raised",
    "ParseError": "a file that cannot be parsed is recorded by the index run and skipped; "
                  "a read turns the failure into path_refused",
}


def documented_codes() -> set[str]:
    text = (ROOT / "docs" / "mcp.md").read_text(encoding="utf-8")
    section = text.split("### Error codes", 1)[1].split("\n#", 1)[0]
    return {m for m in re.findall(r"^\| `([a-z_]+)` \|", section, re.M)}


def tool_codes() -> set[str]:
    """Every code ``failure_result`` (the one place a tool failure becomes a result) gives:
    for each error class a tool may let out, and for the codes it spells itself."""
    import mcp_types as types

    from kbmcp_adapters.mcp_server import tools

    codes = set()
    for name, cls in error_classes().items():
        if name in NEVER_A_TOOL_ANSWER:
            continue
        required = [p for p in inspect.signature(cls).parameters.values()
                    if p.default is inspect.Parameter.empty]
        block = tools.failure_result(cls(*["x"] * len(required))).content[0]
        assert isinstance(block, types.TextContent)
        codes.add(json.loads(block.text)["error"]["code"])
    source = inspect.getsource(tools.failure_result)
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Tuple):
            first = node.value.elts[0]
            if isinstance(first, ast.Constant) and isinstance(first.value, str):
                codes.add(first.value)
    return codes


def test_mcp_md_lists_exactly_the_codes_the_tools_can_answer() -> None:
    assert set(NEVER_A_TOOL_ANSWER) <= set(error_classes())
    assert {"internal_error", "path_refused"} <= tool_codes()
    assert documented_codes() == tool_codes()


def test_the_root_error_is_never_raised_itself() -> None:
    raised = []
    for package in ("kbmcp_core", "kbmcp_adapters", "kbmcp_cli"):
        for path in (ROOT / package).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if (isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call)
                        and isinstance(node.exc.func, ast.Name) and node.exc.func.id == "KbError"):
                    raised.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert raised == []


# -- the test tiers --------------------------------------------------------------------------
def make_recipes() -> dict[str, str]:
    """Target -> its first recipe line, from the Makefile."""
    recipes: dict[str, str] = {}
    target = None
    for line in (ROOT / "Makefile").read_text(encoding="utf-8").splitlines():
        if line.startswith("\t") and target is not None and target not in recipes:
            recipes[target] = line.strip()
        elif match := re.match(r"^([\w-]+):", line):
            target = match[1]
    return recipes


def test_the_tiers_cover_every_test_folder_once_and_make_test_runs_all() -> None:
    recipes = make_recipes()
    tiers = {name: re.findall(r"\btests/\w+", recipes[name])
             for name in ("test-unit", "test-integration", "test-e2e")}
    folders = sorted(f"tests/{d.name}" for d in (ROOT / "tests").iterdir()
                     if d.is_dir() and any(d.glob("test_*.py")))
    listed = [f for fs in tiers.values() for f in fs]
    assert sorted(listed) == folders  # each folder in exactly one tier
    assert tiers["test-unit"] == ["tests/unit"] and tiers["test-e2e"] == ["tests/e2e"]
    assert re.fullmatch(r"\$\(BIN\)/python -m pytest( \$\(PARALLEL\))?( \$\(PYTEST_ARGS\))?",
                        recipes["test"])
