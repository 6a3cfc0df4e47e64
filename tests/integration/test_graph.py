"""The connection graph over the real stores and model: neighbours come from LanceDB, only
offered documents appear, and the MCP tool and the library agree."""

from __future__ import annotations

from pathlib import Path

import pytest

from kbmcp_core.errors import InvalidQuery, NotOffered
from kbmcp_core.graph import GraphBounds
from tests.conftest import OpenKb, write_files

KEYS = "Rotate the signing keys every ninety days with the vault CLI; keep the old key a week."
FILES = {
    "ops/keys.md": f"# Rotating signing keys\n\n{KEYS}\n",
    "ops/key-rollback.md": "# Key rollback\n\nWhen a signing key rotation fails, restore the "
                           "previous signing key from the vault and rotate again.\n",
    "ops/vault.md": "# The vault\n\nThe vault stores the signing keys and rotates them.\n",
    "garden/tomatoes.md": "# Tomatoes\n\nStake the tomatoes in June and water the beds.\n",
    "garden/basil.md": "# Basil\n\nBasil likes the warm south bed next to the tomatoes.\n",
    # indexed while .txt was enabled, then the format is dropped: searchable, not offered
    "ops/keys-copy.txt": f"Rotating signing keys. {KEYS}\n",
}


@pytest.fixture()
def kb_path(tmp_path: Path, open_kb: OpenKb) -> Path:
    root = tmp_path / "kb"
    write_files(root, FILES)
    kb = open_kb(root, enabled_formats=("md", "txt"))
    kb.index()
    kb.close()
    return root


def test_graph_links_related_documents_and_never_shows_one_the_offer_excludes(
        kb_path: Path, open_kb: OpenKb) -> None:
    kb = open_kb(kb_path, enabled_formats=("md",))
    assert "ops/keys-copy.txt" in kb.indexed_paths()  # still indexed...
    assert "ops/keys-copy.txt" not in kb.offered_paths()  # ...but not offered
    graph = kb.connection_graph(path="ops/keys.md",
                                bounds=GraphBounds(depth=2, fan_out=10, threshold=0.0))
    paths = [n.path for n in graph.nodes]
    assert paths[0] == "ops/keys.md" and graph.nodes[0].seed
    assert "ops/keys-copy.txt" not in paths
    assert {"ops/key-rollback.md", "ops/vault.md"} <= set(paths)
    near = {(e.source, e.target): e.similarity for e in graph.edges}
    keys_rollback = near[("ops/key-rollback.md", "ops/keys.md")]
    keys_tomatoes = near.get(("garden/tomatoes.md", "ops/keys.md"), -1.0)
    assert keys_rollback > keys_tomatoes  # related documents are the nearer ones
    assert graph.nodes[0].uri == "kb://doc/ops/keys.md"

    # a threshold between the two keeps the key documents and drops the garden
    strict = kb.connection_graph(path="ops/keys.md", bounds=GraphBounds(
        depth=1, threshold=(keys_rollback + max(keys_tomatoes, 0.0)) / 2))
    assert {n.path for n in strict.nodes} >= {"ops/keys.md", "ops/key-rollback.md"}
    assert not any(n.path.startswith("garden/") for n in strict.nodes)


def test_graph_from_a_query_seeds_on_the_documents_search_finds(
        kb_path: Path, open_kb: OpenKb) -> None:
    kb = open_kb(kb_path, enabled_formats=("md",))
    graph = kb.connection_graph(query="staking tomatoes in the garden",
                                bounds=GraphBounds(depth=0))
    seeds = {n.path for n in graph.nodes if n.seed}
    assert "garden/tomatoes.md" in seeds
    assert "ops/keys-copy.txt" not in seeds
    assert graph.as_dict()["seeded_by"] == {"query": "staking tomatoes in the garden"}


def test_graph_of_a_document_not_offered_is_refused(kb_path: Path, open_kb: OpenKb) -> None:
    kb = open_kb(kb_path, enabled_formats=("md",))
    with pytest.raises(NotOffered):
        kb.connection_graph(path="ops/keys-copy.txt")
    with pytest.raises(InvalidQuery, match="exactly one"):
        kb.connection_graph()
