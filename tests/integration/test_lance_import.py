"""Opening the vectors does not build LanceDB's unused REST client (decision 0045): a fresh
process that writes, indexes (IVF_PQ) and searches a real LanceDB table never imports the
client's API classes, gets the same answers, and a caller that asks for the client still
gets it. Nor, before Python 3.12, does LanceDB's import run the ``overrides`` package's
checks of its own methods (decision 0057, session 16's addendum)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from kbmcp_adapters.vectors.lance_import import OVERRIDES, REST_CLIENT

SCRIPT = textwrap.dedent(f"""
    import json, sys
    import numpy as np
    from kbmcp_adapters.vectors.lance_store import LanceVectorStore

    rng = np.random.default_rng(5)
    m = rng.normal(size=(700, 16))
    m = (m / np.linalg.norm(m, axis=1, keepdims=True)).astype(np.float32)
    store = LanceVectorStore(sys.argv[1], 16, ann_min_rows=600)
    store.add(list(range(1, 701)), m.tolist())
    store.compact()
    hits = [store.search(q.tolist(), 3)[0][0] for q in m[:20]]
    out = {{"ann": store.ann_state(), "hits": hits, "rows": len(store.ids()),
           "api_loaded": "{REST_CLIENT}.api" in sys.modules}}
    import {REST_CLIENT} as client  # a caller that wants the REST client
    out["client"] = client.ApiClient.__name__
    out["api_after"] = "{REST_CLIENT}.api" in sys.modules
    print(json.dumps(out))
""")


def test_the_vectors_open_write_and_search_without_the_rest_client(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-c", SCRIPT, str(tmp_path / "vectors")],
                          capture_output=True, text=True, timeout=300, check=True)
    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert got["rows"] == 700 and got["ann"] == [700, 700]
    assert got["hits"] == list(range(1, 21))  # each vector finds itself first
    assert got["api_loaded"] is False  # its ~370 validators were never built
    assert got["client"] == "ApiClient" and got["api_after"] is True


OVERRIDES_SCRIPT = textwrap.dedent(f"""
    import json, sys
    from kbmcp_adapters.vectors.lance_import import import_lancedb
    lancedb = import_lancedb()
    left = "{OVERRIDES}" in sys.modules
    import {OVERRIDES} as later  # a package that imports it afterwards
    print(json.dumps({{"left": left, "real": hasattr(later, "__file__"),
                      "marked": lancedb.db.LanceDBConnection.open_table.__override__}}))
""")


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="LanceDB uses typing.override there")
def test_lancedb_imports_without_checking_its_own_overrides() -> None:
    """Its methods are marked as ``typing.override`` marks them on 3.12; the ``overrides``
    package (each mark a disassembly of the module and a signature comparison) is not
    run, and whoever imports it later gets the real package."""
    done = subprocess.run([sys.executable, "-c", OVERRIDES_SCRIPT], capture_output=True,
                          text=True, timeout=300, check=True)
    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert got == {"left": False, "real": True, "marked": True}
