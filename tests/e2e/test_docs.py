"""What the docs promise runs: the README's library snippet, and every doctor check in --help."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

from kbmcp_core.doctor import CHECKS

ROOT = Path(__file__).resolve().parents[2]
#: The docs/ pages the README snippet runs on (a copy; see the test).
README_SNIPPET_PAGES = ("behaviour.md", "mcp.md", "clients.md")


def readme_snippet() -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    assert len(blocks) == 1, "the README has one Python snippet"
    return blocks[0]


def test_the_readme_library_snippet_runs_as_written(tmp_path: Path,
                                                    kb_env: dict[str, str]) -> None:
    # the pages the snippet reads (behaviour.md) and asks about (resources: mcp.md), and one
    # more; the rest of docs/ would only add embedding time (all of it but the decision
    # records is 3.6 times the text, and made this the slowest test: decision 0038)
    (tmp_path / "docs").mkdir()
    for page in README_SNIPPET_PAGES:
        shutil.copy(ROOT / "docs" / page, tmp_path / "docs" / page)
    done = subprocess.run([sys.executable, "-c", readme_snippet()], cwd=tmp_path, env=kb_env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == 6  # three hits, a title, a count, the health
    assert all(" — " in line for line in lines[:3])
    assert lines[3] == "What kb-mcp indexes, refuses, offers and reads"
    assert re.fullmatch(r"\d+ documents offered", lines[4])
    assert lines[5] == "True"


def test_doctor_help_documents_every_check(kb_env: dict[str, str]) -> None:
    done = subprocess.run([sys.executable, "-m", "kbmcp_cli", "doctor", "--help"], env=kb_env,
                          capture_output=True, text=True, timeout=60, check=True)
    for check in CHECKS:
        assert check.id in done.stdout


def test_the_usage_page_lists_every_doctor_check() -> None:
    text = (ROOT / "docs" / "usage.md").read_text(encoding="utf-8")
    assert [c.id for c in CHECKS if f"`{c.id}`" not in text] == []
