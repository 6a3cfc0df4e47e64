"""Import LanceDB without building the REST namespace client it never uses here, and without
checking its own method overrides on every import.

``import lancedb`` imports ``lance_namespace``, which re-exports the models of the generated
REST client ``lance_namespace_urllib3_client``. That package's own body also imports every
API class of the client, and pydantic's ``validate_call`` builds a validator for each of
their ~370 methods while the module loads: about half of the CPU ``import lancedb`` costs
(decision 0045), paid by every process that opens the vectors (an index run, ``serve``,
``search``). kb-mcp opens a folder or an object-storage location, never a REST namespace.

So, before the first import of LanceDB, the client's package is registered without running
its body: its submodules (the models) import as they always do, and the first lookup of a
name only the body defines (``ApiClient``, ``TableApi``, ...) runs the body then and
answers it (a module ``__getattr__``, PEP 562). Nothing is lost for a caller that does
want the REST client; it pays the import when it asks.

LanceDB also marks ~105 methods of its connection classes with ``override``: on Python 3.12
and later ``typing.override``, which only sets ``__override__``; before 3.12 the
``overrides`` package's, which for each of them disassembles the module's code up to the
class to find its bases, then compares both signatures (and makes ``DBConnection``'s
metaclass check every subclass). That is LanceDB's own test of itself: about 150 ms of
CPU per import on Python 3.11 (decision 0057, addendum of session 16), a quarter of the
whole import. So while LanceDB imports, ``overrides`` answers what 3.12 gives LanceDB:
an ``override`` that only marks and a plain ``EnforceOverrides``. The stand-in is gone
from ``sys.modules`` once LanceDB is imported (no other package installed here uses
``overrides``; one that imports it later gets the real one).
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import sys
import threading
from collections.abc import Callable, Iterator
from types import ModuleType
from typing import Any

__all__ = ["LANCEDB_LOG_ENV", "OVERRIDES", "REST_CLIENT", "import_lancedb"]

#: The environment variable that sets the level of LanceDB's native log (stderr).
LANCEDB_LOG_ENV = "LANCEDB_LOG"

#: The generated REST client whose package body is deferred.
REST_CLIENT = "lance_namespace_urllib3_client"
#: The package whose decorator LanceDB uses before Python 3.12 (``typing.override`` after).
OVERRIDES = "overrides"

_lock = threading.RLock()


def import_lancedb() -> ModuleType:
    """``lancedb``, imported with the REST client's package body deferred."""
    with _lock:
        if "lancedb" not in sys.modules:
            # LanceDB's native logger, set up as it loads, prints warnings straight to
            # stderr, mostly its KMeans training on small tables ("clusters are empty"),
            # harmless: errors only, unless the user chose a level (docs/configuration.md)
            os.environ.setdefault(LANCEDB_LOG_ENV, "error")
            if REST_CLIENT not in sys.modules:
                _defer(REST_CLIENT)
            with _marks_only_overrides():
                import lancedb
        import lancedb

        return lancedb


@contextlib.contextmanager
def _marks_only_overrides() -> Iterator[None]:
    """While the body runs, ``overrides`` is what Python 3.12 gives LanceDB instead (see
    the module docstring); nothing changes on 3.12 or when ``overrides`` is imported."""
    if sys.version_info >= (3, 12) or OVERRIDES in sys.modules:
        yield
        return
    stand_in = ModuleType(OVERRIDES, "LanceDB's overrides as on Python 3.12: marks only")

    def override(method: Callable[..., Any] | None = None, **_checks: bool) -> Any:
        if method is None:  # ``@override(check_signature=...)``
            return override
        method.__override__ = True  # type: ignore[attr-defined]
        return method

    stand_in.__dict__.update(override=override, overrides=override,
                             EnforceOverrides=type("EnforceOverrides", (), {}))
    sys.modules[OVERRIDES] = stand_in
    try:
        yield
    finally:
        if sys.modules.get(OVERRIDES) is stand_in:
            del sys.modules[OVERRIDES]


def _defer(name: str) -> None:
    """Register package ``name`` with its ``__path__`` but without running its body; the
    body runs on the first lookup of a name the package does not have yet."""
    spec = importlib.util.find_spec(name)
    if spec is None or spec.loader is None or spec.submodule_search_locations is None:
        return  # not installed as a package here: LanceDB's own import says what is wrong
    module = importlib.util.module_from_spec(spec)
    loaded = False

    def __getattr__(attr: str) -> Any:  # noqa: N807 (the module hook's name)
        nonlocal loaded
        with _lock:
            if not loaded:
                loaded = True
                assert spec.loader is not None
                spec.loader.exec_module(module)
        if attr in module.__dict__:
            return module.__dict__[attr]
        raise AttributeError(f"module {name!r} has no attribute {attr!r}")

    module.__dict__["__getattr__"] = __getattr__
    sys.modules[name] = module
