"""Import LanceDB without building the REST namespace client it never uses here.

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
"""

from __future__ import annotations

import importlib.util
import sys
import threading
from types import ModuleType
from typing import Any

__all__ = ["REST_CLIENT", "import_lancedb"]

#: The generated REST client whose package body is deferred.
REST_CLIENT = "lance_namespace_urllib3_client"

_lock = threading.RLock()


def import_lancedb() -> ModuleType:
    """``lancedb``, imported with the REST client's package body deferred."""
    with _lock:
        if "lancedb" not in sys.modules and REST_CLIENT not in sys.modules:
            _defer(REST_CLIENT)
        import lancedb

        return lancedb


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
