"""The dependency rule, read from the source: who may import whom (docs/architecture.md).

- ``kbmcp_core`` imports only the standard library.
- Driven adapters (store, vectors, embedding, filesystem, parsers, rerank) import only the core and
  their own folder; the migrations belong to the store.
- ``app/`` wires them and may import every driven adapter folder; it alone holds the
  Container.
- Driving adapters (live, mcp_server) import the core, ``app/`` and their own folder.
- ``kbmcp_cli`` imports the core, ``app/``, ``mcp_server/`` and ``live/``.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

DRIVEN = frozenset({"store", "vectors", "embedding", "filesystem", "parsers", "rerank"})
DRIVING = frozenset({"live", "mcp_server"})
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
    "kbmcp_cli/main.py": "import click\nfrom kbmcp_adapters.mcp_server import tools\n"
                         "from kbmcp_adapters.live.watcher import w\n",
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
    ])
