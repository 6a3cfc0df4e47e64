"""`kb-mcp status` and `kb-mcp doctor` with several collections: each collection under its
name with its own folder, store, counts, freshness and findings; `--collection` narrows
them; one collection that cannot be read does not hide the others."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from kbmcp_adapters.app.bootstrap import settings_for
from kbmcp_adapters.app.collections import open_collections
from kbmcp_adapters.embedding.fastembed_embedder import FastEmbedEmbedder
from tests.cli.conftest import Invoke
from tests.conftest import write_files

CONFIG = """
[[collections]]
name = "alpha"
path = "alpha"
description = "Alpha notes"

[[collections]]
name = "beta"
path = "beta"

[[collections]]
name = "gamma"
path = "gamma"
default = false
"""


def _team(tmp_path: Path, embedder: FastEmbedEmbedder) -> Path:
    """Three collections; alpha (2 documents) and beta (1) indexed, gamma never."""
    root = tmp_path / "team"
    write_files(root / "alpha", {"keys.md": "# Keys\n\nRotate the signing keys.\n",
                                 "deploy.md": "# Deploy\n\nBlue-green deployments.\n"})
    write_files(root / "beta", {"backup.md": "# Backups\n\nNightly ledger snapshots.\n"})
    write_files(root / "gamma", {"basil.md": "# Basil\n\nOn the windowsill.\n"})
    config = root / "kb-mcp.toml"
    config.write_text(CONFIG, encoding="utf-8")
    collections = open_collections(settings_for(None, config), embedder=embedder)
    try:
        assert collections.kb("alpha").index().added == 2
        assert collections.kb("beta").index().added == 1
    finally:
        collections.close()
    return config


def test_status_shows_each_collection_and_collection_narrows_it(
    tmp_path: Path, kb_mcp: Invoke, embedder: FastEmbedEmbedder
) -> None:
    config = _team(tmp_path, embedder)
    index_dir = config.parent / ".kb-mcp" / "collections"

    text = kb_mcp("status", "--config", str(config))
    assert text.exit_code == 2, text.output  # gamma has no index yet
    out = text.stdout
    assert out.count("config: ") == 1 and out.startswith("config: ")
    blocks = {b.split("\n", 1)[0]: b for b in out.split("collection: ")[1:]}
    assert list(blocks) == ["alpha (Alpha notes)", "beta",
                            "gamma [not searched by default]"]
    alpha, beta, gamma = blocks.values()
    assert f"  kb_path: {config.parent / 'alpha'}\n" in alpha
    assert f"  store: {index_dir / 'alpha' / 'index.db'}\n" in alpha
    assert "  documents: 2\n" in alpha and "  ready: yes" in alpha
    assert f"  store: {index_dir / 'beta' / 'index.db'}\n" in beta
    assert "  documents: 1\n" in beta and "  last_run: 2" in beta
    assert "  watcher: not running" in beta
    assert "  error: " in gamma and "kb-mcp index" in gamma

    narrowed = kb_mcp("status", "--config", str(config), "--collection", "beta",
                      "--collection", "alpha", "--format", "json")
    assert narrowed.exit_code == 0, narrowed.output
    data = json.loads(narrowed.stdout)
    assert data["config"]["file"] == str(config)
    assert [(c["name"], c["documents"], c["ready"]) for c in data["collections"]] == [
        ("beta", 1, True), ("alpha", 2, True)]
    assert data["collections"][1]["description"] == "Alpha notes"
    assert data["collections"][0]["store"] == str(index_dir / "beta" / "index.db")

    wrong = kb_mcp("status", "--config", str(config), "--collection", "delta")
    assert wrong.exit_code == 2
    assert "delta" in wrong.stderr and "alpha" in wrong.stderr and "gamma" in wrong.stderr
    assert wrong.stdout == ""


def test_doctor_reports_each_collections_own_findings(
    tmp_path: Path, kb_mcp: Invoke, embedder: FastEmbedEmbedder
) -> None:
    config = _team(tmp_path, embedder)
    # beta's vectors are lost: beta has findings, alpha stays healthy
    shutil.rmtree(config.parent / ".kb-mcp" / "collections" / "beta" / "vectors")

    both = kb_mcp("doctor", "--config", str(config), "--collection", "alpha",
                  "--collection", "beta")
    assert both.exit_code == 1, both.output
    alpha, beta = both.stdout.split("collection: ")[1:]
    assert alpha.startswith("alpha\n") and "  healthy: no findings" in alpha
    assert "  documents: 2  chunks: " in alpha
    assert beta.startswith("beta\n") and "healthy" not in beta
    assert "  [error] " in beta and "remedy: " in beta

    every = kb_mcp("doctor", "--config", str(config), "--format", "json")
    assert every.exit_code == 2, every.output  # gamma could not be checked: no index
    reports = {r["name"]: r for r in json.loads(every.stdout)["collections"]}
    assert list(reports) == ["alpha", "beta", "gamma"]
    assert reports["alpha"]["findings"] == [] and reports["alpha"]["documents"] == 2
    assert reports["beta"]["findings"] and reports["beta"]["documents"] == 1
    assert "doctor could not run" in reports["gamma"]["error"]
    assert "findings" not in reports["gamma"]

    alone = kb_mcp("doctor", "--config", str(config), "--collection", "alpha")
    assert alone.exit_code == 0, alone.output


def test_one_folder_is_one_collection_named_after_it(tmp_path: Path, kb_mcp: Invoke,
                                                     embedder: FastEmbedEmbedder) -> None:
    root = tmp_path / "handbook"
    write_files(root, {"a.md": "# A\n\nAlpha.\n"})
    collections = open_collections(settings_for(root), embedder=embedder)
    try:
        assert collections.kb("handbook").index().added == 1
    finally:
        collections.close()
    plain = kb_mcp("status", "--kb-path", str(root))
    named = kb_mcp("status", "--kb-path", str(root), "--collection", "handbook")
    assert plain.exit_code == named.exit_code == 0
    assert named.stdout == plain.stdout and "collection:" not in plain.stdout
    other = kb_mcp("doctor", "--kb-path", str(root), "--collection", "notes")
    assert other.exit_code == 2 and "handbook" in other.stderr


def test_eval_tune_and_graph_work_on_the_collection_named_and_never_guess_among_several(
    tmp_path: Path, kb_mcp: Invoke, embedder: FastEmbedEmbedder
) -> None:
    config = _team(tmp_path, embedder)
    golden = tmp_path / "golden.yml"
    golden.write_text("queries:\n- {id: k, query: rotate the signing keys, "
                      "expected: [{path: keys.md}]}\n", encoding="utf-8")
    base = ("--config", str(config))
    for command in (("eval", "--golden", str(golden)), ("tune", "--golden", str(golden)),
                    ("graph", "--query", "signing keys")):
        refused = kb_mcp(*command, *base)
        assert refused.exit_code == 2, refused.output
        assert "3 collections (alpha, beta, gamma)" in refused.output
        assert "--collection" in refused.output
    # eval measures the collection named: keys.md lives in alpha, not in beta
    found = kb_mcp("eval", "--golden", str(golden), "--format", "json", "--mode", "lexical",
                   "--collection", "alpha", *base)
    assert found.exit_code == 0, found.output
    assert json.loads(found.stdout)["document"]["recall@1"] == 1.0
    missed = kb_mcp("eval", "--golden", str(golden), "--format", "json", "--mode", "lexical",
                    "--collection", "beta", *base)
    assert json.loads(missed.stdout)["document"]["recall@1"] == 0.0
    drawn = kb_mcp("graph", "--query", "signing keys", "--collection", "alpha", *base)
    assert drawn.exit_code == 0, drawn.output
    assert {n["path"] for n in json.loads(drawn.stdout)["nodes"]} <= {"keys.md", "deploy.md"}
    unknown = kb_mcp("graph", "--query", "keys", "--collection", "delta", *base)
    assert unknown.exit_code == 2 and "alpha" in unknown.output
