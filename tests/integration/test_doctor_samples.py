"""Doctor's samples name the files a finding is about (``keys.md L1-6``), never a bare
chunk id a user cannot look up; a row that belongs to nothing says so."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

from kbmcp_core.doctor import DoctorReport
from tests.integration.test_doctor_remedies import (  # noqa: F401  (fixtures)
    add_stray_vectors,
    base_kb,
    doctor,
    drop_a_lexical_row,
    drop_some_vectors,
    env,
    kb,
    orphan_a_chunk,
)

BARE_ID = re.compile(r"^\d+$")


def test_chunk_findings_name_their_files(
        kb: Path, env: dict[str, str], doctor: Callable[[], DoctorReport]) -> None:  # noqa: F811
    for fault in (drop_some_vectors, drop_a_lexical_row, add_stray_vectors, orphan_a_chunk):
        fault(kb, env)
    report = {f.check: f for f in doctor().findings}
    missing = report["missing-vector"]
    assert missing.count == 3  # two dropped vectors, and the stray chunk 88 has none
    named = [s for s in missing.samples if not s.startswith("no chunk")]
    assert sorted(s.split(" ")[0] for s in named) == ["garden.md", "keys.md"]
    assert all(re.search(r" (L\d+-\d+|p\.\d+)$", s) for s in named), missing.samples
    assert any(s.startswith("keys.md L") for s in report["missing-lexical-row"].samples)
    for gone in ("orphan-vector", "chunk-without-document"):
        assert all("no chunk or no document left" in s for s in report[gone].samples), gone
    for finding in report.values():
        assert not any(BARE_ID.match(s) for s in finding.samples), finding
