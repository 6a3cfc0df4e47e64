"""``kb-mcp migrate-store`` with ``[[collections]]``: each collection's index copied to
its own schema of the target PostgreSQL database and its vectors to its own prefix, so
the printed config serves every collection without re-embedding."""

from __future__ import annotations

import json
import re
from pathlib import Path

from sqlalchemy.engine import make_url

from kbmcp_adapters.app.bootstrap import settings_for
from kbmcp_adapters.app.collections import open_collections
from kbmcp_adapters.embedding.fastembed_embedder import FastEmbedEmbedder
from tests.cli.conftest import Invoke
from tests.collections_support import TWO_COLLECTIONS
from tests.conftest import write_files
from tests.pg_cluster import PgCluster

CONFIG = TWO_COLLECTIONS


def test_each_collection_is_copied_to_its_own_schema_and_prefix(
    tmp_path: Path, kb_mcp: Invoke, embedder: FastEmbedEmbedder, pg_url: str,
    pg_cluster: PgCluster
) -> None:
    root = tmp_path / "team"
    write_files(root / "alpha", {"keys.md": "# Keys\n\nRotate the vault signing keys.\n",
                                 "deploy.md": "# Deploy\n\nBlue-green deployments.\n"})
    write_files(root / "beta", {"garden.md": "# Garden\n\nTomatoes need staking in June.\n"})
    config = root / "kb-mcp.toml"
    config.write_text(CONFIG, encoding="utf-8")
    local = open_collections(settings_for(None, config), embedder=embedder)
    try:
        assert local.kb("alpha").index().added == 2
        assert local.kb("beta").index().added == 1
    finally:
        local.close()
    vectors = tmp_path / "shared-vectors"
    to = ("--to", pg_url, "--vectors-to", str(vectors))

    first = kb_mcp("migrate-store", "--config", str(config), *to, "--collection", "alpha")
    assert first.exit_code == 0, first.output
    assert "copied collection alpha: 2 documents" in first.stdout
    assert "beta" not in first.stdout
    assert "kb-mcp: copying collection alpha: " in first.stderr
    assert "(schema kb_alpha)" in first.stderr
    database = str(make_url(pg_url).database)
    with pg_cluster.connect(database) as conn:  # type: ignore[attr-defined]
        schemas = conn.execute("SELECT nspname FROM pg_namespace WHERE nspname LIKE 'kb\\_%' "
                               "ORDER BY 1").fetchall()
    assert schemas == [("kb_alpha",)]

    rest = kb_mcp("migrate-store", "--config", str(config), *to, "--collection", "beta")
    assert rest.exit_code == 0, rest.output
    assert "copied collection beta: 1 documents" in rest.stdout
    assert sorted(p.name for p in vectors.iterdir()) == ["alpha", "beta"]
    printed = [line for line in rest.stdout.splitlines()
               if re.match(r"^(database_url|vectors_uri|\[embedding\]|model) ?", line)]
    assert f'vectors_uri = "{vectors}"' in printed

    # the printed lines, with the same [[collections]], serve both from the new store
    team = tmp_path / "team.toml"
    team.write_text("\n".join(printed) + "\n" + CONFIG.replace('path = "', f'path = "{root}/'),
                    encoding="utf-8")
    status = kb_mcp("status", "--config", str(team), "--format", "json")
    assert status.exit_code == 0, status.output
    found = {c["name"]: c for c in json.loads(status.stdout)["collections"]}
    assert (found["alpha"]["documents"], found["beta"]["documents"]) == (2, 1)
    assert found["alpha"]["store"].endswith("(schema kb_alpha)")
    assert found["beta"]["vectors"] == str(vectors / "beta")
    doctor = kb_mcp("doctor", "--config", str(team))
    assert doctor.exit_code == 0, doctor.output
    assert doctor.stdout.count("healthy: no findings") == 2
    copied = open_collections(settings_for(None, team), embedder=embedder)
    try:
        hits = copied.kb("beta").search("tomatoes staking", mode="vector", limit=5).results
        assert [h.path for h in hits] == ["garden.md"]
        assert copied.kb("alpha").indexed_paths() == ["deploy.md", "keys.md"]
    finally:
        copied.close()
