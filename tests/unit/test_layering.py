"""The dependency direction: core imports only the standard library; adapters never the CLI."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def imported_modules(package: str) -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for path in (ROOT / package).rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        names: set[str] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names.update(a.name.split(".")[0] for a in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names.add(node.module.split(".")[0])
        found[str(path.relative_to(ROOT))] = names
    return found


def test_core_imports_only_the_standard_library_and_itself() -> None:
    allowed = set(sys.stdlib_module_names) | {"kbmcp_core", "__future__"}
    leaks = {f: sorted(n - allowed) for f, n in imported_modules("kbmcp_core").items()
             if n - allowed}
    assert leaks == {}


def test_adapters_never_import_the_cli() -> None:
    leaks = {f for f, n in imported_modules("kbmcp_adapters").items() if "kbmcp_cli" in n}
    assert leaks == set()


def test_the_layering_test_would_catch_a_leak(tmp_path: Path) -> None:
    tree = ast.parse("import sqlalchemy\nfrom lancedb import connect\n")
    names = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    names |= {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
    assert names - set(sys.stdlib_module_names) == {"sqlalchemy", "lancedb"}
