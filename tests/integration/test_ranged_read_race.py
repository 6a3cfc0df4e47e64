"""A ranged read through a folder swapped for a link mid-way is refused like any read:
ranges and range URIs go through the same root-bound open (decision 0033)."""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from kbmcp_adapters.app.bootstrap import bootstrap
from kbmcp_adapters.app.config import build_settings
from kbmcp_adapters.app.knowledge_base import KnowledgeBase
from kbmcp_core.errors import PathRefused
from kbmcp_core.uris import doc_range_uri
from tests.hashing_embedder import HashingEmbedder
from tests.integration.test_root_bound_reads import (
    DEADLINE,
    READS,
    SECRET,
    Swapper,
    Tally,
    make_race_kb,
)


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
    swapper = Swapper(kb.settings.kb_path, outside)
    thread = threading.Thread(target=swapper.run, daemon=True)
    tally = Tally()
    uri = doc_range_uri("sub/race.md", 1, 3)
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    thread.start()
    end = time.monotonic() + DEADLINE
    try:
        while (tally.reads < READS or tally.refused == 0) and time.monotonic() < end:
            try:
                if tally.reads % 2:
                    text = kb.read_resource(uri).text
                else:
                    got = kb.get_document("sub/race.md", start_line=1, max_lines=3)
                    assert got.part is not None and got.part.end_line == 3
                    text = got.content
            except PathRefused as exc:
                tally.refused += 1
                assert SECRET not in str(exc)
            except Exception as exc:  # noqa: BLE001 - the test counts what escaped
                tally.other.append(f"{type(exc).__name__}: {exc}")
            else:
                tally.body(text)
            tally.reads += 1
    finally:
        swapper.stop.set()
        thread.join(timeout=DEADLINE)
        sys.setswitchinterval(interval)
    print(f"\nranged reads under a folder swap: {tally.reads} reads, {tally.served} served, "
          f"{tally.refused} refused, {tally.leaks} outside, {swapper.swaps} swaps")
    assert swapper.error is None, swapper.error
    assert tally.leaks == 0, f"{tally.leaks} ranged reads returned the outside file"
    assert tally.other == [], tally.other[:5]
    assert swapper.swaps > 0 and tally.served > 0 and tally.refused > 0
