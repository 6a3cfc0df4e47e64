"""The parser worker pool (decision 0022): converted formats run in child processes with
memory and time limits; a worker that crashes, hangs or runs out of memory costs one file;
the pool starts on first use, is reused, and stops with the knowledge base."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from kbmcp_adapters.app.config import build_settings
from kbmcp_adapters.parsers.budget import ParserLimits
from kbmcp_adapters.parsers.isolation import Isolation
from kbmcp_adapters.parsers.registry import FormatRegistry, build_registry
from kbmcp_core.errors import ConfigError, ParseError
from kbmcp_core.ports import ChunkBudget
from tests.conftest import OpenKb
from tests.integration.amplifiers import (
    broken_link_epub,
    deep_html,
    office_folder,
    shared_strings_workbook,
    slideshow_as_pptx,
    strict_workbook,
)

BUDGET = ChunkBudget(max_tokens=256, min_tokens=24, counter=lambda text: len(text.split()) + 2)
FORMATS = ("md", "html", "docx", "pptx", "xlsx", "epub")


def workers() -> list[int]:
    """The parser worker processes this test process has started and not yet reaped."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if not entry.name.isdigit() or b"worker_main" not in (entry / "cmdline").read_bytes():
                continue
            status = (entry / "status").read_text(encoding="ascii")
        except OSError:
            continue
        if f"\nPPid:\t{os.getpid()}\n" in status:
            found.append(int(entry.name))
    return found


def dead(pid: int) -> bool:
    """True once ``pid`` has ended (a zombie waiting to be reaped, or gone)."""
    try:
        return (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def wait_for(condition: Callable[[], bool], seconds: float = 30.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.05)


@pytest.fixture
def registry() -> Iterator[Callable[..., FormatRegistry]]:
    built: list[FormatRegistry] = []

    def _build(limits: ParserLimits | None = None, **isolation: int) -> FormatRegistry:
        made = build_registry(FORMATS, limits or ParserLimits(), Isolation(**isolation))
        built.append(made)
        return made

    yield _build
    for made in built:
        made.close()
    wait_for(lambda: not workers())


def one_file() -> bytes:
    return office_folder(3)["yields-002.xlsx"]


def test_the_pool_starts_on_first_use_is_reused_and_stops_on_close(
    registry: Callable[..., FormatRegistry],
) -> None:
    reg = registry()
    assert workers() == []  # building the registry starts nothing
    parser = reg.parser_for("xlsx")
    assert parser is not None
    first = parser.extract_text("a.xlsx", one_file())
    assert "Plot: P2-0" in first
    (worker,) = workers()
    assert parser.extract_text("b.xlsx", one_file()) == first
    assert workers() == [worker]  # the same process converted both
    reg.close()
    wait_for(lambda: not workers())


def test_a_worker_imports_nothing_from_the_folder_it_was_started_in(
    registry: Callable[..., FormatRegistry], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A knowledge base (or any folder a user starts kb-mcp in) may hold a file named like a
    # library the parsers import: a worker must never run it.
    marker = tmp_path / "ran"
    (tmp_path / "bs4.py").write_text(f"open({str(marker)!r}, 'w').close()\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    parser = registry().parser_for("html")
    assert parser is not None
    text = parser.extract_text("p.html", b"<html><body><h1>Beds</h1><p>Mulch.</p></body></html>")
    assert "Mulch" in text
    assert not marker.exists()


def test_every_converted_format_gives_the_same_document_in_a_worker_and_in_process(
    registry: Callable[..., FormatRegistry],
) -> None:
    isolated = registry()
    local = build_registry(FORMATS, ParserLimits(), None)
    assert local.pool is None
    samples = {
        "strict.xlsx": strict_workbook(),
        "plan.pptx": slideshow_as_pptx(),
        "garden.epub": broken_link_epub(),
        "page.html": b"<html><title>T</title><body><h1>Beds</h1><p>Mulch well.</p></body></html>",
        **{name: data for name, data in office_folder(3).items()},
    }
    for name, data in samples.items():
        ext = name.rsplit(".", 1)[1]
        here, there = local.parser_for(ext), isolated.parser_for(ext)
        assert here is not None and there is not None
        assert there.parse(name, data, BUDGET) == here.parse(name, data, BUDGET)
        assert there.extract_text(name, data) == here.extract_text(name, data)


def test_a_worker_that_crashes_costs_one_file_and_is_replaced(
    registry: Callable[..., FormatRegistry],
) -> None:
    parser = registry().parser_for("xlsx")
    assert parser is not None
    parser.extract_text("a.xlsx", one_file())
    (worker,) = workers()
    os.kill(worker, signal.SIGSEGV)  # what a crash in native code looks like
    wait_for(lambda: dead(worker))
    with pytest.raises(ParseError) as caught:
        parser.extract_text("b.xlsx", one_file())
    assert str(caught.value) == "parser crashed (SIGSEGV)"
    assert "Plot: P2-0" in parser.extract_text("c.xlsx", one_file())  # a new worker


def test_a_worker_killed_under_its_memory_limit_is_not_blamed_on_memory(
    registry: Callable[..., FormatRegistry],
) -> None:
    parser = registry(memory_mb=1024).parser_for("xlsx")
    assert parser is not None
    parser.extract_text("a.xlsx", one_file())
    (worker,) = workers()
    os.kill(worker, signal.SIGKILL)  # someone else's kill (a person, a supervisor)
    wait_for(lambda: dead(worker))
    with pytest.raises(ParseError) as caught:
        parser.extract_text("b.xlsx", one_file())
    assert str(caught.value) == "parser was killed (SIGKILL)"  # what is known, no guess
    assert "Plot: P2-0" in parser.extract_text("c.xlsx", one_file())


def test_a_worker_of_a_large_process_is_not_blamed_for_its_parents_memory(
    registry: Callable[..., FormatRegistry],
) -> None:
    # A server holds its model (hundreds of MiB); the kernel counts a child's peak from
    # its parent's pages, so the worker's own growth is not what its peak says.
    ballast = bytearray(300 * 1024 * 1024)
    ballast[::4096] = b"\x01" * len(range(0, len(ballast), 4096))
    parser = registry(memory_mb=128).parser_for("xlsx")
    assert parser is not None
    parser.extract_text("a.xlsx", one_file())
    (worker,) = workers()
    os.kill(worker, signal.SIGKILL)
    wait_for(lambda: dead(worker))
    with pytest.raises(ParseError) as caught:
        parser.extract_text("b.xlsx", one_file())
    assert str(caught.value) == "parser was killed (SIGKILL)"
    del ballast


def test_a_worker_death_names_memory_only_when_it_grew_near_its_limit() -> None:
    from kbmcp_adapters.parsers.isolation import death_message

    mib = 1024 * 1024
    assert death_message(-signal.SIGKILL, 1000 * mib, 1024) == (
        "parser was killed (SIGKILL) after growing by 1,000 MiB, near its memory limit "
        "(1,024 MiB); limit [parsers].memory_limit_mb")
    assert death_message(-signal.SIGKILL, 80 * mib, 1024) == "parser was killed (SIGKILL)"
    assert death_message(-signal.SIGKILL, None, 1024) == "parser was killed (SIGKILL)"
    assert death_message(-signal.SIGABRT, 120 * mib, 128) == (
        "parser crashed (SIGABRT) after growing by 120 MiB, near its memory limit (128 MiB); "
        "limit [parsers].memory_limit_mb")
    assert death_message(3, None, 1024) == "parser worker ended unexpectedly (exit code 3)"


def test_a_worker_that_hangs_is_killed_after_the_time_limit(
    registry: Callable[..., FormatRegistry], monkeypatch: pytest.MonkeyPatch
) -> None:
    from kbmcp_adapters.parsers import isolation

    monkeypatch.setattr(isolation, "GRACE_SECONDS", 0.5)
    parser = registry(ParserLimits(timeout_seconds=1)).parser_for("xlsx")
    assert parser is not None
    parser.extract_text("a.xlsx", one_file())
    (worker,) = workers()
    os.kill(worker, signal.SIGSTOP)  # stuck, as in a loop inside a C library
    started = time.monotonic()
    with pytest.raises(ParseError) as caught:
        parser.extract_text("b.xlsx", one_file())
    assert str(caught.value) == (
        "parser timed out after 1 s and was stopped; limit [parsers].timeout_seconds"
    )
    assert time.monotonic() - started < 30
    assert worker not in workers()  # killed and reaped
    assert "Plot: P2-0" in parser.extract_text("c.xlsx", one_file())


def test_a_file_over_the_memory_limit_costs_one_file_in_an_index_run(
    tmp_path: Path, open_kb: OpenKb
) -> None:
    """With the text budget lifted, the shared-strings workbook runs into the worker's
    memory cap instead: one refused file, named as such, and the run goes on."""
    (tmp_path / "shared.xlsx").write_bytes(shared_strings_workbook())
    (tmp_path / "beds.xlsx").write_bytes(one_file())
    (tmp_path / "good.md").write_text("# Compost\n\nTurn the heap weekly.\n", encoding="utf-8")
    kb = open_kb(
        tmp_path,
        enabled_formats=FORMATS,
        parsers_memory_limit_mb=128,
        parsers_max_output_chars=1_000_000_000,
    )
    summary = kb.index()
    assert (summary.added, summary.failed) == (2, 1)
    (warning,) = [w for w in summary.warnings if w.startswith("shared.xlsx:")]
    assert warning == (
        "shared.xlsx: parser exceeded its memory limit (128 MiB); limit [parsers].memory_limit_mb"
    )
    assert kb.search("turn the heap weekly").results[0].path == "good.md"
    assert "Plot: P2-0" in kb.get_document("beds.xlsx").content
    kb.close()
    wait_for(lambda: not workers())


def test_reads_go_through_the_workers_and_their_budgets(tmp_path: Path, open_kb: OpenKb) -> None:
    (tmp_path / "deep.html").write_bytes(deep_html())
    (tmp_path / "plan.pptx").write_bytes(slideshow_as_pptx())
    kb = open_kb(tmp_path, enabled_formats=FORMATS, parsers_max_elements=1_000)
    assert workers() == []
    assert "Irrigation plan" in kb.get_document("plan.pptx").content
    assert len(workers()) == 1
    with pytest.raises(Exception) as caught:
        kb.get_document("deep.html")
    assert "holds more than 1,000 elements" in str(caught.value)
    assert "limit [parsers].max_elements" in str(caught.value)
    kb.close()
    wait_for(lambda: not workers())


def test_in_process_parsing_keeps_the_budgets(tmp_path: Path, open_kb: OpenKb) -> None:
    (tmp_path / "shared.xlsx").write_bytes(shared_strings_workbook())
    (tmp_path / "good.md").write_text("# Compost\n\nTurn the heap weekly.\n", encoding="utf-8")
    kb = open_kb(
        tmp_path, enabled_formats=FORMATS, parsers_isolate=False, parsers_max_output_chars=5_000_000
    )
    summary = kb.index()
    assert (summary.added, summary.failed) == (1, 1)
    assert workers() == []
    (warning,) = [w for w in summary.warnings if w.startswith("shared.xlsx:")]
    assert warning.endswith(
        "produces more than 5,000,000 characters of text; limit [parsers].max_output_chars"
    )


def test_the_parsers_keys_are_read_from_the_config_and_checked(tmp_path: Path) -> None:
    config = tmp_path / "kb-mcp.toml"
    config.write_text(
        "[parsers]\nenabled = ['md', 'xlsx']\nmax_output_chars = 2000000\nmax_elements = 5000\n"
        "timeout_seconds = 12.5\nisolate = false\nworkers = 3\nmemory_limit_mb = 512\n",
        encoding="utf-8",
    )
    s = build_settings(config, kb_path=tmp_path)
    assert (
        s.parsers_max_output_chars,
        s.parsers_max_elements,
        s.parsers_timeout_seconds,
        s.parsers_isolate,
        s.parsers_workers,
        s.parsers_memory_limit_mb,
    ) == (2_000_000, 5_000, 12.5, False, 3, 512)
    for key, bad, said in (
        ("max_output_chars", "10", "[parsers].max_output_chars must be from 1,000 to"),
        ("workers", "0", "[parsers].workers must be from 1 to 32, got 0"),
        ("memory_limit_mb", "16", "[parsers].memory_limit_mb must be from 64 to 65,536"),
        ("timeout_seconds", "0", "[parsers].timeout_seconds must be from 1 to 3,600"),
        ("isolate", "'yes'", "parsers.isolate"),
    ):
        config.write_text(f"[parsers]\n{key} = {bad}\n", encoding="utf-8")
        with pytest.raises(ConfigError) as caught:
            build_settings(config, kb_path=tmp_path)
        assert said in str(caught.value)
