"""The dependency rule, read from the source: who may import whom (docs/architecture.md).

- ``kbmcp_core`` imports only the standard library.
- Driven adapters (store, vectors, embedding, filesystem, parsers, rerank) import only the core and
  their own folder; the migrations belong to the store; the reranker borrows the packaged-model
  plumbing (package lookup, sha256 check, onnxruntime session) of ``embedding``.
- ``app/`` wires them and may import every driven adapter folder; it alone holds the
  Container.
- Driving adapters (live, mcp_server, local_search, evaluation, service) import the core, ``app/``
  and their own folder, never each other; evaluation also uses the parsers' heading
  clean-up, to compare headings as the index stores them.
- ``kbmcp_cli`` imports the core, ``app/`` and every driving adapter folder.
- No module imports itself round about (imports inside functions count too).
- Nothing shipped imports ``tests`` or ``benchmarks`` (the test doubles are not in the wheel).
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

DRIVEN = frozenset({"store", "vectors", "embedding", "filesystem", "parsers", "rerank"})
DRIVING = frozenset({"live", "mcp_server", "local_search", "evaluation", "service"})
#: Which layers each layer may import (besides the standard library and third parties).
ALLOWED: dict[str, frozenset[str]] = {
    "core": frozenset({"core"}),
    **{d: frozenset({"core", d}) for d in DRIVEN},
    "migrations": frozenset({"core", "store", "migrations"}),
    "app": frozenset({"core", "app"}) | DRIVEN,
    **{d: frozenset({"core", "app", d}) for d in DRIVING},
    "cli": frozenset({"core", "app", "cli"}) | DRIVING,
}
ALLOWED["store"] = ALLOWED["store"] | {"migrations"}
ALLOWED["rerank"] = ALLOWED["rerank"] | {"embedding"}
ALLOWED["evaluation"] = ALLOWED["evaluation"] | {"parsers"}
PACKAGES = ("kbmcp_core", "kbmcp_adapters", "kbmcp_cli", "migrations")


def layer_of_module(name: str) -> str:
    """The layer an imported module belongs to; "stdlib" or "external" outside the project."""
    parts = name.split(".")
    top = parts[0]
    if top == "kbmcp_core":
        return "core"
    if top == "kbmcp_cli":
        return "cli"
    if top in ("migrations", "kbmcp_migrations"):
        return "migrations"
    if top in ("tests", "benchmarks"):
        return "checkout"  # not in the wheel: no layer may import it
    if top == "kbmcp_adapters":
        if len(parts) > 1 and parts[1] in DRIVEN | DRIVING | {"app"}:
            return parts[1]
        return "app"  # the package root re-exports the facade
    return "stdlib" if top in sys.stdlib_module_names or top == "__future__" else "external"


def layer_of_file(rel: Path) -> str:
    parts = rel.parts
    if parts[0] == "kbmcp_core":
        return "core"
    if parts[0] == "kbmcp_cli":
        return "cli"
    if parts[0] == "migrations":
        return "migrations"
    if rel == Path("kbmcp_adapters/__init__.py"):
        return "app"
    if len(parts) > 2 and parts[1] in ALLOWED:
        return parts[1]
    return f"unclassified ({'/'.join(parts[:2])})"


def _package_of(rel: Path) -> list[str]:
    parts = list(rel.with_suffix("").parts)
    return parts[:-1] if parts[-1] != "__init__" else parts[:-1]


def imports_of(source: str, rel: Path) -> list[tuple[int, str, str]]:
    """(line, module) for every import in the file, relative ones resolved, ``from a
    import b`` as ``a.b`` (so ``from kbmcp_adapters import store`` names the folder).
    Each as (line, module as written, module to classify)."""
    found: list[tuple[int, str, str]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                pkg = _package_of(rel)
                base = pkg[: len(pkg) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            found += [(node.lineno, module, f"{module}.{a.name}") for a in node.names]
    return found


def container_reaches(source: str) -> list[int]:
    """Lines that touch ``.container`` or import ``Container`` or ``bootstrap`` (which
    builds one): only app/ may."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute) and node.attr == "container":
            lines.append(node.lineno)
        if isinstance(node, ast.ImportFrom) and any(
                a.name in ("Container", "bootstrap") for a in node.names):
            lines.append(node.lineno)
    return lines


def violations(root: Path) -> list[str]:
    """Every import (and Container reach) that breaks the rule, as ``file:line: why``."""
    out: list[str] = []
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            rel = path.relative_to(root)
            source = path.read_text(encoding="utf-8")
            layer = layer_of_file(rel)
            if layer not in ALLOWED:
                out.append(f"{rel}: {layer}: not in any layer (add its folder to the rule)")
                continue
            for line, module, full in imports_of(source, rel):
                target = layer_of_module(full)
                if target == "stdlib" or (target == "external" and layer != "core"):
                    continue
                why = f"{rel}:{line}: {layer} imports {module} ({target})"
                if target not in ALLOWED[layer] and why not in out:
                    out.append(why)
            if layer != "app":
                out += [f"{rel}:{line}: {layer} reaches into the container"
                        for line in container_reaches(source)]
    return out


def test_every_module_follows_the_layering_rule() -> None:
    found = violations(ROOT)
    assert found == [], "layering violations:\n" + "\n".join(found)


def _tree(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


CLEAN = {
    "kbmcp_core/models.py": "import dataclasses\nfrom . import errors\n",
    "kbmcp_core/errors.py": "from __future__ import annotations\n",
    "kbmcp_adapters/__init__.py": "from kbmcp_adapters.app.kb import open_knowledge_base\n",
    "kbmcp_adapters/store/sql.py": "import sqlalchemy\nfrom kbmcp_core.models import X\n"
                                   "from .tables import t\nimport kbmcp_migrations\n",
    "kbmcp_adapters/store/tables.py": "from kbmcp_adapters.store import sql\n",
    "kbmcp_adapters/app/kb.py": "from kbmcp_adapters.store.sql import S\n"
                                "from kbmcp_adapters.vectors import lance\n"
                                "def f(kb):\n    return kb.container.store\n",
    "kbmcp_adapters/live/watcher.py": "from kbmcp_adapters.app.kb import KnowledgeBase\n"
                                      "from .paths import p\n",
    "kbmcp_adapters/mcp_server/tools.py": "import mcp\n"
                                          "from kbmcp_adapters import open_knowledge_base\n",
    "kbmcp_adapters/local_search/serve_task.py": "from kbmcp_adapters.app.kb import KnowledgeBase\n"
                                                 "from .server import LocalSearchServer\n",
    "kbmcp_adapters/evaluation/golden.py": "from kbmcp_adapters.parsers.headings import h\n"
                                           "from kbmcp_adapters.app.kb import KnowledgeBase\n",
    "kbmcp_cli/main.py": "import click\nfrom kbmcp_adapters.mcp_server import tools\n"
                         "from kbmcp_adapters.live.watcher import w\n"
                         "from kbmcp_adapters.local_search.client import ask\n"
                         "from kbmcp_adapters.evaluation import golden\n",
    "migrations/env.py": "from kbmcp_adapters.store.tables import metadata\n",
}


def test_a_tree_that_follows_the_rule_passes(tmp_path: Path) -> None:
    assert violations(_tree(tmp_path, CLEAN)) == []


def test_the_layering_test_reports_each_kind_of_leak(tmp_path: Path) -> None:
    bad = {
        **CLEAN,
        "kbmcp_core/search.py": "import numpy\n",
        "kbmcp_adapters/vectors/lance.py": "from kbmcp_adapters.embedding.fe import E\n",
        "kbmcp_adapters/parsers/md.py": "def f():\n    from ..filesystem import local\n",
        "kbmcp_adapters/live/watcher.py": "from kbmcp_adapters.store.sql import S\n",
        "kbmcp_adapters/mcp_server/tools.py": "def f(kb):\n    return kb.container.store\n",
        "kbmcp_adapters/app/kb.py": "import kbmcp_cli.main\n",
        "kbmcp_cli/status.py": "from kbmcp_adapters import store\n",
        "kbmcp_cli/index.py": "def f():\n    from kbmcp_adapters.app.boot import bootstrap\n",
        "kbmcp_adapters/misc.py": "import os\n",
        "kbmcp_adapters/local_search/serve_task.py": "from kbmcp_adapters.mcp_server import rt\n",
        "kbmcp_adapters/evaluation/golden.py": "from kbmcp_adapters.store.sql import S\n",
        "kbmcp_adapters/rerank/double.py": "from tests.term_overlap_reranker import T\n",
    }
    found = violations(_tree(tmp_path, bad))
    assert sorted(found) == sorted([
        "kbmcp_core/search.py:1: core imports numpy (external)",
        "kbmcp_adapters/vectors/lance.py:1: vectors imports kbmcp_adapters.embedding.fe "
        "(embedding)",
        "kbmcp_adapters/parsers/md.py:2: parsers imports kbmcp_adapters.filesystem "
        "(filesystem)",
        "kbmcp_adapters/live/watcher.py:1: live imports kbmcp_adapters.store.sql (store)",
        "kbmcp_adapters/mcp_server/tools.py:2: mcp_server reaches into the container",
        "kbmcp_adapters/app/kb.py:1: app imports kbmcp_cli.main (cli)",
        "kbmcp_cli/status.py:1: cli imports kbmcp_adapters (store)",
        "kbmcp_cli/index.py:2: cli reaches into the container",
        "kbmcp_adapters/misc.py: unclassified (kbmcp_adapters/misc.py): not in any layer "
        "(add its folder to the rule)",
        "kbmcp_adapters/local_search/serve_task.py:1: local_search imports "
        "kbmcp_adapters.mcp_server (mcp_server)",
        "kbmcp_adapters/evaluation/golden.py:1: evaluation imports kbmcp_adapters.store.sql "
        "(store)",
        "kbmcp_adapters/rerank/double.py:1: rerank imports tests.term_overlap_reranker "
        "(checkout)",
    ])


# -- no import cycle ----------------------------------------------------------------
#: The packages the cycle check covers (the migrations are Alembic's scripts, not imported).
CYCLE_PACKAGES = ("kbmcp_core", "kbmcp_adapters", "kbmcp_cli")


def import_graph(root: Path) -> dict[str, set[str]]:
    """Each project module and the project modules it imports. Every import counts:
    module level, inside functions and under ``if TYPE_CHECKING`` (a deferred import still
    ties the two modules together). An imported name resolves to the deepest module file
    that exists (``from a.b import c`` is ``a.b.c`` when that is a module, else ``a.b``)."""
    files: dict[str, Path] = {}
    for package in CYCLE_PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            rel = path.relative_to(root)
            files[".".join(_package_of(rel) + ([] if rel.stem == "__init__" else [rel.stem]))] = rel

    def resolve(name: str) -> str | None:
        while name and name not in files:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {}
    for module, rel in files.items():
        source = (root / rel).read_text(encoding="utf-8")
        if rel.stem == "__init__":  # a package face: what importing it runs
            targets = {resolve(full) for full in face_imports(source, rel)}
        else:
            targets = {resolve(full) for _, _, full in imports_of(source, rel)}
        # importing a module runs the faces of the packages around it first
        targets |= {face for face in _faces_of(module) if face in files}
        graph[module] = {t for t in targets if t is not None and t != module}
    return graph


def _faces_of(module: str) -> list[str]:
    """The packages ``module`` is in (``a.b.c``: ``a``, ``a.b``)."""
    parts = module.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts))]


def face_imports(source: str, rel: Path) -> list[str]:
    """The project modules a package's ``__init__`` imports when it is imported: its
    module-level imports, not those under ``if TYPE_CHECKING`` nor inside functions (a
    lazy face, ``__getattr__``, names its modules without importing them)."""
    tree = ast.parse(source)
    at_import: list[ast.stmt] = [n for n in tree.body if isinstance(n, ast.Import | ast.ImportFrom)]
    return [full for _, _, full in imports_of(ast.unparse(ast.Module(at_import, [])), rel)]


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The groups of modules that import each other, round about (Tarjan's strongly
    connected components of more than one module), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                cycles.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(cycles)


def test_no_module_imports_itself_round_about() -> None:
    cycles = import_cycles(import_graph(ROOT))
    assert cycles == [], "import cycles:\n" + "\n".join(" <-> ".join(c) for c in cycles)


def test_the_cycle_check_finds_a_cycle_through_an_eager_package_face(tmp_path: Path) -> None:
    # importing ``server.schemas`` runs ``server/__init__``, which imports ``http``, which
    # imports ``schemas``: a cycle no import statement shows; a lazy face makes none
    eager = "from kbmcp_adapters.server.http import serve\n"
    lazy = ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
            "    from kbmcp_adapters.server.http import serve\n"
            "def __getattr__(name):\n    from kbmcp_adapters.server import http\n"
            "    return http.serve\n")
    files = {"kbmcp_core/__init__.py": "", "kbmcp_adapters/__init__.py": "",
             "kbmcp_adapters/server/schemas.py": "import json\n",
             "kbmcp_adapters/server/http.py": "from . import schemas\n",
             "kbmcp_cli/__init__.py": ""}
    assert import_cycles(import_graph(_tree(tmp_path / "eager", {
        **files, "kbmcp_adapters/server/__init__.py": eager}))) == [
        ["kbmcp_adapters.server", "kbmcp_adapters.server.http", "kbmcp_adapters.server.schemas"]]
    assert import_cycles(import_graph(_tree(tmp_path / "lazy", {
        **files, "kbmcp_adapters/server/__init__.py": lazy}))) == []


def test_importing_the_server_schemas_loads_no_server() -> None:
    """``schemas`` (the tool inputs the CLI reads) is imported without the HTTP server or
    the MCP SDK's server: the package face imports nothing eagerly."""
    import subprocess

    code = ("import sys, kbmcp_adapters.mcp_server.schemas as s; "
            "print(sorted(m for m in sys.modules if m.startswith('kbmcp_adapters.mcp_server')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=ROOT, timeout=60).stdout
    assert out.strip() == "['kbmcp_adapters.mcp_server', 'kbmcp_adapters.mcp_server.schemas']"


def test_the_cycle_check_finds_a_cycle_through_a_deferred_import(tmp_path: Path) -> None:
    tree = _tree(tmp_path, {
        "kbmcp_core/__init__.py": "",
        "kbmcp_core/models.py": "from kbmcp_core import errors\n",
        "kbmcp_core/errors.py": "import dataclasses\n",
        "kbmcp_adapters/__init__.py": "",
        "kbmcp_adapters/embedding/__init__.py": "",
        "kbmcp_adapters/embedding/registry.py": "def make():\n"
                                                "    from .onnx import E\n    return E()\n",
        "kbmcp_adapters/embedding/onnx.py": "from kbmcp_adapters.embedding.registry import M\n",
        "kbmcp_adapters/embedding/common.py": "from typing import TYPE_CHECKING\n"
                                              "if TYPE_CHECKING:\n"
                                              "    from kbmcp_adapters.embedding import plain\n",
        "kbmcp_adapters/embedding/plain.py": "from . import common\n",
        "kbmcp_cli/__init__.py": "",
        "kbmcp_cli/main.py": "from kbmcp_core.models import Chunk\n",
    })
    assert import_cycles(import_graph(tree)) == [
        ["kbmcp_adapters.embedding.common", "kbmcp_adapters.embedding.plain"],
        ["kbmcp_adapters.embedding.onnx", "kbmcp_adapters.embedding.registry"],
    ]
