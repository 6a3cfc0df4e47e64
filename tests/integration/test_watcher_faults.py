"""Live sync under faults: undecodable names, stops in the middle of a sync, a held index."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from kbmcp_adapters.app.knowledge_base import IndexRunStopped, KnowledgeBase
from kbmcp_adapters.embedding.fastembed_embedder import FastEmbedEmbedder
from kbmcp_adapters.live.watcher import Watcher
from kbmcp_core.errors import WriterBusy
from tests.conftest import OpenKb, write_files
from tests.integration.test_watcher import WAIT_S, Live, note

#: the live-sync package: the sync thread (``watcher``) and the reader (``watch_events``)
WATCHER_LOG = "kbmcp_adapters.live"


@pytest.fixture
def started() -> Iterator[list[Live]]:
    """Watchers the test started; each is stopped (and must end) at the end."""
    running: list[Live] = []
    yield running
    for lv in running:
        assert lv.w.stop(timeout=WAIT_S), "the watcher thread did not end"


def watch(root: Path, kb: KnowledgeBase, running: list[Live]) -> Live:
    lv = Live(root, kb)
    lv.watcher = Watcher(kb, debounce_ms=200, on_synced=lv.on_synced)
    running.append(lv)
    lv.w.start()
    assert lv.w.wait_ready(WAIT_S), lv.w.status()
    return lv


def watcher_records(caplog: pytest.LogCaptureFixture, level: int) -> list[logging.LogRecord]:
    return [r for r in caplog.records
            if r.name.startswith(WATCHER_LOG + ".") and r.levelno >= level]


def test_a_name_that_is_not_utf8_leaves_live_sync_working(
    tmp_path: Path, open_kb: OpenKb, started: list[Live], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger=WATCHER_LOG)
    root = tmp_path / "kb"
    write_files(root, {"ok.md": note("obsidian")})
    kb = open_kb(root)
    kb.index()
    lv = watch(root, kb, started)
    bad = os.fsencode(root) + b"/bad-\xff.md"
    for round_ in range(3):
        # an event under an undecodable name (the file written, then read back)...
        with open(bad, "wb") as f:
            f.write(f"# Bad {round_}\n\nnot utf-8 in its name\n".encode())
        with open(bad, "rb") as f:
            f.read()
        # ...and a change to another file in the same moment: it must still be found
        word = f"feldspar{round_}quartz"
        lv.write(f"later{round_}.md", note(word))
        lv.wait_until(partial(lv.finds, word, f"later{round_}.md"),
                      f"later{round_}.md found after the undecodable name")
    assert lv.finds("obsidian", "ok.md")
    warnings = watcher_records(caplog, logging.WARNING)
    assert len(warnings) == 1, [r.getMessage() for r in warnings]
    assert "UTF-8" in warnings[0].getMessage()
    assert not watcher_records(caplog, logging.ERROR)
    status = lv.w.status()
    undecodable = status["undecodable_names"]
    assert status["alive"] and isinstance(undecodable, int) and undecodable >= 1


def test_a_folder_whose_name_is_not_utf8_does_not_blind_the_watcher(
    tmp_path: Path, open_kb: OpenKb, started: list[Live], caplog: pytest.LogCaptureFixture
) -> None:
    """Watching such a folder natively reports it at once (its own walk opens it), so a
    restart alone would fail forever: the watcher must carry on another way."""
    caplog.set_level(logging.INFO, logger=WATCHER_LOG)
    root = tmp_path / "kb"
    write_files(root, {"ok.md": note("basalt")})
    folder = os.fsencode(root) + b"/notes-\xff"
    os.mkdir(folder)
    with open(folder + b"/inside.md", "wb") as f:
        f.write(b"# Inside\n\nunder a folder whose name is not UTF-8\n")
    kb = open_kb(root)
    kb.index()
    lv = watch(root, kb, started)
    for round_ in range(2):
        os.listdir(folder)  # anyone looking into the folder
        word = f"gabbro{round_}diorite"
        lv.write(f"fresh{round_}.md", note(word))
        lv.wait_until(partial(lv.finds, word, f"fresh{round_}.md"),
                      f"fresh{round_}.md found next to the undecodable folder")
    assert len(watcher_records(caplog, logging.WARNING)) == 1
    assert not watcher_records(caplog, logging.ERROR)


def test_stop_interrupts_a_running_sync_at_a_safe_point(
    tmp_path: Path, open_kb: OpenKb, started: list[Live], embedder: FastEmbedEmbedder
) -> None:
    """A sync with several embedding calls ahead of it stops after the one in progress."""
    root = tmp_path / "kb"
    write_files(root, {"a.md": note("granite")})
    kb = open_kb(root, embedding_batch_size=4)  # a flush every 32 chunks: several calls
    kb.index()
    lv = watch(root, kb, started)
    # ``embedder`` is the session's model, the one open_kb hands to the knowledge base
    real_embed = embedder.embed_documents
    entered, first_done, later = threading.Event(), threading.Event(), threading.Event()

    def embed_gated(texts: Sequence[str]) -> list[Any]:
        if not entered.is_set():
            entered.set()  # the sync has reached its first embedding call
            first_done.wait(WAIT_S)
        else:
            later.wait(WAIT_S * 3)  # a later call waits until the test is over
        return list(real_embed(texts))

    embedder.embed_documents = embed_gated  # type: ignore[method-assign]
    ended: list[bool] = []
    stopper = threading.Thread(target=lambda: ended.append(lv.w.stop(timeout=WAIT_S)))
    try:
        staging = tmp_path / "staging"  # moved in at once: one event, one run
        write_files(staging, {f"bulk/{i:02d}.md": note(f"marble{i}slate") for i in range(40)})
        os.rename(staging / "bulk", root / "bulk")
        assert entered.wait(WAIT_S), lv.w.status()
        stopper.start()
        asked = time.monotonic() + WAIT_S
        while lv.w.status()["alive"] and time.monotonic() < asked:  # stop() has been called
            stopper.join(0.01)
        first_done.set()  # the call in progress ends; no other may start
        stopper.join(WAIT_S * 2)
        assert ended == [True], "stop() gave up waiting for the rest of the sync"
    finally:
        first_done.set()
        later.set()
        stopper.join(WAIT_S)
        del embedder.embed_documents
    # what the stopped run had not finished is completed by the next one
    summary = kb.index()
    assert summary.failed == 0
    assert all(kb.document(f"bulk/{i:02d}.md") for i in range(40))
    assert lv.finds("marble7slate", "bulk/07.md")


def test_a_stopped_knowledge_base_refuses_to_start_a_run(tmp_path: Path, open_kb: OpenKb) -> None:
    root = tmp_path / "kb"
    write_files(root, {"a.md": note("pumice")})
    kb = open_kb(root)
    kb.stop_writers()
    with pytest.raises(IndexRunStopped):
        kb.index()


HOLD = """
import sys, time
from pathlib import Path
from kbmcp_adapters.store.cross_process_lock import writer_lock
with writer_lock(Path(sys.argv[1]), 5):
    print("held", flush=True)
    sys.stdin.read()  # held until the test closes our stdin
"""


def test_one_deadline_covers_the_wait_behind_another_writer_in_this_process(
    tmp_path: Path, open_kb: OpenKb
) -> None:
    """The watcher (or a rebuild) holding the index in this process: a second writer is
    told busy within its own timeout, while the first still holds the index."""
    root = tmp_path / "kb"
    write_files(root, {"a.md": note("jasper")})
    kb = open_kb(root, writer_lock_timeout_s=0.5)
    kb.index()
    write_files(root, {"b.md": note("agate"), "c.md": note("onyx")})
    holding, release = threading.Event(), threading.Event()

    def hold(*_progress: object) -> None:
        holding.set()
        release.wait(WAIT_S * 3)

    holder = threading.Thread(target=kb.index, kwargs={"progress": hold})
    holder.start()
    answer: list[BaseException] = []

    def second_writer() -> None:
        try:
            kb.index()
        except BaseException as exc:  # noqa: BLE001  (the test inspects it)
            answer.append(exc)

    try:
        assert holding.wait(WAIT_S)
        second = threading.Thread(target=second_writer)
        second.start()
        second.join(WAIT_S)
        assert not second.is_alive(), "the second writer was not answered while the first held"
        assert holder.is_alive()  # the answer came while the index was still held
        assert len(answer) == 1 and isinstance(answer[0], WriterBusy), answer
        assert "in this process" in str(answer[0])
    finally:
        release.set()
        holder.join(WAIT_S * 3)
    assert not holder.is_alive()


def test_one_deadline_covers_a_lock_held_by_another_process(
    tmp_path: Path, open_kb: OpenKb
) -> None:
    root = tmp_path / "kb"
    write_files(root, {"a.md": note("beryl")})
    kb = open_kb(root, writer_lock_timeout_s=0.5)
    kb.index()
    proc = subprocess.Popen([sys.executable, "-c", HOLD, str(kb.settings.index_dir)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdin is not None
    try:
        assert proc.stdout.readline().strip() == "held"
        with pytest.raises(WriterBusy, match=f"pid {proc.pid}"):
            kb.index()
        assert proc.poll() is None  # still holding when the answer came
    finally:
        proc.stdin.close()
        proc.wait(timeout=WAIT_S)
        proc.stdout.close()
