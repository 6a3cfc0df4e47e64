"""The ``kb-mcp`` entry point leaves a one-command process's heap to exit (``app/heap.py``;
decision 0057, session-19 addendum): a search runs with the cyclic collector paused, and
whatever any command leaves is frozen once it has answered, so the interpreter's last
collection does not walk the model's, LanceDB's and SQLAlchemy's objects on the way out
(about 0.2 s of a cold search). Run through ``main`` itself, with the collector replaced
by a recorder (pausing or freezing the test process's own collector is not the test's to
do); the in-process runner (``cli``) never touches it.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from kbmcp_adapters.app import heap
from kbmcp_cli.main import main
from tests.cli.conftest import Invoke


class RecordedCollector:
    """What the entry point asked of the garbage collector, and whether the command's
    answer was already printed when it asked to freeze."""

    def __init__(self, capsys: pytest.CaptureFixture[str]) -> None:
        self.asked: list[str] = []
        self.capsys = capsys
        self.printed_before_freeze = ""

    def disable(self) -> None:
        self.asked.append("disable")

    def freeze(self) -> None:
        self.asked.append("freeze")
        self.printed_before_freeze = self.capsys.readouterr().out


def _run_main(argv: list[str], monkeypatch: pytest.MonkeyPatch,
              collector: RecordedCollector) -> object:
    monkeypatch.setattr(heap, "gc", collector)
    monkeypatch.setattr(sys, "argv", ["kb-mcp", *argv])
    with pytest.raises(SystemExit) as ended:
        main()
    return ended.value.code


def test_a_cold_search_pauses_the_collector_and_leaves_its_heap_to_exit(
        kb_mcp: Invoke, kb: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    assert kb_mcp("index", "--kb-path", str(kb)).exit_code == 0
    collector = RecordedCollector(capsys)
    code = _run_main(["search", "--kb-path", str(kb), "--no-server", "--mode", "lexical",
                      "key rotation"], monkeypatch, collector)
    assert code == 0
    assert collector.asked == ["disable", "freeze"]
    assert "a.md" in collector.printed_before_freeze  # the answer is out before the freeze


def test_another_command_keeps_its_collector_and_freezes_only_as_it_ends(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    collector = RecordedCollector(capsys)
    code = _run_main(["docs", "configuration"], monkeypatch, collector)
    assert code == 0
    assert collector.asked == ["freeze"]
    assert "kb_path" in collector.printed_before_freeze  # the page was printed first
