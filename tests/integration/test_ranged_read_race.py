"""A ranged read through a folder swapped for a link mid-way is refused like any read:
ranges and range URIs go through the same root-bound open (decision 0033)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from kbmcp_adapters.app.bootstrap import bootstrap
from kbmcp_adapters.app.config import build_settings
from kbmcp_adapters.app.knowledge_base import KnowledgeBase
from kbmcp_core.uris import doc_range_uri
from tests.hashing_embedder import HashingEmbedder
from tests.integration.test_root_bound_reads import make_race_kb, race_reads


@pytest.fixture
def race_kb(tmp_path: Path) -> Iterator[tuple[KnowledgeBase, Path]]:
    kb_path, outside = make_race_kb(tmp_path)
    settings = build_settings(None, cwd=kb_path, kb_path=kb_path)
    kb = KnowledgeBase(bootstrap(settings, embedder=HashingEmbedder()))
    kb.index()
    assert "sub/race.md" in kb.offered_paths()
    yield kb, outside
    kb.close()


def test_a_folder_swapped_for_a_link_never_serves_outside_lines(
    race_kb: tuple[KnowledgeBase, Path],
) -> None:
    kb, outside = race_kb
    uri = doc_range_uri("sub/race.md", 1, 3)

    def read(n: int) -> str:
        if n % 2:
            return kb.read_resource(uri).text
        got = kb.get_document("sub/race.md", start_line=1, max_lines=3)
        assert got.part is not None and got.part.end_line == 3
        return got.content

    tally = race_reads(kb, outside, read)
    assert tally.leaks == 0, f"{tally.leaks} ranged reads returned the outside file"
    assert tally.other == [], tally.other[:5]
    assert tally.swaps > 0 and tally.served > 0 and tally.refused > 0
