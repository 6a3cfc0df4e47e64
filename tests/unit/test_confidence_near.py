"""``low_confidence`` reads whether the chunks nearest by meaning hold the question's words
(decision 0056, fifth addendum): a question about a program a folder only mentions in
passing finds chunks about its other words, none naming the program."""

from __future__ import annotations

from kbmcp_core.confidence import (
    NEAR_DEPTH,
    NEAR_FULL_CHUNKS,
    NEAR_MIN_CHUNKS,
    NEAR_SHARE,
    evidence,
    is_low,
    near_bar,
    near_share,
)
from kbmcp_core.keyword_pool import KeywordStatistics
from kbmcp_core.models import StoredChunk

#: gdb's, GnuPG's and strace's release notes, one file per release (the ``news`` set)
CHUNKS = 832
SYSTEMD = "How do I write a systemd unit that restarts a service when it fails"
#: the index's counts of its words (the word leg's and the trigram leg's, as search asks)
SYSTEMD_COUNTS = {("words", "write"): 42, ("words", "systemd"): 3, ("words", "unit"): 6,
                  ("words", "restarts"): 7, ("words", "service"): 6, ("words", "fails"): 17,
                  ("grams", "systemd"): 1, ("grams", "restarts"): 1}
DEBUGINFOD = "can gdb download separate debug info automatically from a debuginfod server"
DEBUGINFOD_COUNTS = {("words", "gdb"): 480, ("words", "download"): 9,
                     ("words", "separate"): 40, ("words", "debug"): 120, ("words", "info"): 200,
                     ("words", "automatically"): 30, ("words", "debuginfod"): 2,
                     ("words", "server"): 25}


def chunk(cid: int, path: str, text: str) -> StoredChunk:
    return StoredChunk(cid, path, path, "", (), text, 1, 3, None, (), None, None, None)


def notes(first: str) -> dict[int, StoredChunk]:
    """Twenty releases' notes, ``first`` the nearest; the others about options and fixes."""
    out = {0: chunk(0, "gdb/13.txt", first)}
    for i in range(1, 20):
        out[i] = chunk(i, f"gnupg/2.{i}.txt", f"* gpg: New option --opt{i} to write the "
                                              "keyring faster.\n* Fixed a crash.")
    return out


def found(counts: dict[tuple[str, str], int], chunks: dict[int, StoredChunk], *,
          candidates: int = 100, folder: int = CHUNKS) -> bool:
    # near the question (0.40, leading the tenth document by 0.18), keywords weak (0.10):
    # the similarity tests pass it
    vector = [(cid, 0.40 - 0.02 * cid) for cid in range(min(candidates, len(chunks)))]
    vector += [(1000 + i, 0.01) for i in range(max(candidates - len(chunks), 0))]
    e = evidence(hits=5, vector=vector, chunks=chunks, lexical=[(0, 0.10)], readable=1.0,
                 statistics=KeywordStatistics(folder, counts))
    return is_low(e)


def test_a_program_the_folder_mentions_in_passing_says_not_found() -> None:
    # the question's program and its subject (a unit, restarting a service) are in no
    # chunk near it: before, the similarity and its lead passed it as answered
    passing = notes("* Implemented tracing of the memfd_secret syscall.\n"
                    "* Fixed a hang when the tracee writes to a pipe.")
    assert found(SYSTEMD_COUNTS, passing)
    # ... in a folder large enough that a missing word means a missing subject only
    assert not found(SYSTEMD_COUNTS, passing, folder=NEAR_MIN_CHUNKS - 1)


def test_a_question_whose_nearest_chunk_names_its_subject_is_answered() -> None:
    answer = notes("* GDB now supports debuginfod, an HTTP server for distributing "
                   "ELF/DWARF debugging information: gdb can download separate debug "
                   "info automatically.")
    assert not found(DEBUGINFOD_COUNTS, answer)


def test_the_share_is_the_nearest_chunks_whatever_the_page_and_an_added_document() -> None:
    passing = notes("* Implemented tracing of the memfd_secret syscall.")
    # more candidates (a larger limit fetches more) or an unrelated document in the index
    # (one more chunk, holding none of the question's words) change nothing
    assert found(SYSTEMD_COUNTS, passing, candidates=300)
    assert found(SYSTEMD_COUNTS, passing, folder=CHUNKS + 1)
    answer = notes("* gdb can download separate debug info from a debuginfod server.")
    assert not found(DEBUGINFOD_COUNTS, answer, candidates=300)
    assert not found(DEBUGINFOD_COUNTS, answer, folder=CHUNKS + 1)


def test_a_document_added_where_the_size_was_a_step_changes_no_flag() -> None:
    """The bar rises with the folder's size (decision 0056, sixth addendum): a folder just
    under 300 chunks that gains a two-chunk document is not flipped from never flagged to
    flagging every question whose nearest chunks hold under a quarter of its words."""
    passing = notes("* Implemented tracing of the memfd_secret syscall.\n"
                    "* Fixed a hang when the tracee writes to a pipe.")
    assert (found(SYSTEMD_COUNTS, passing, folder=NEAR_MIN_CHUNKS - 1)
            == found(SYSTEMD_COUNTS, passing, folder=NEAR_MIN_CHUNKS + 1))
    # ... and, in a folder large enough, the question is still caught
    assert found(SYSTEMD_COUNTS, passing, folder=NEAR_FULL_CHUNKS)


def test_the_bar_moves_a_little_with_each_document() -> None:
    sizes = range(NEAR_MIN_CHUNKS - 50, 3 * NEAR_FULL_CHUNKS)
    assert [near_bar(c) for c in sizes] == sorted(near_bar(c) for c in sizes)
    # a document of five chunks moves it by under 0.005, wherever the folder stands
    assert max(near_bar(c + 5) - near_bar(c) for c in sizes) < 0.005
    assert near_bar(NEAR_MIN_CHUNKS) == 0.0
    assert near_bar(NEAR_FULL_CHUNKS) == near_bar(10 * NEAR_FULL_CHUNKS) == NEAR_SHARE


def test_near_share_weighs_rare_words_most_and_reads_title_and_heading_trail() -> None:
    statistics = KeywordStatistics(1000, {("words", "restart"): 100, ("words", "systemd"): 2,
                                          ("words", "nowhere"): 0})
    plain = chunk(1, "a.txt", "how to restart")
    placed = StoredChunk(2, "b.txt", "Systemd", "", ("Units",), "restarts", 1, 2, None, (),
                         None, None, None)
    share = near_share(statistics, [plain])
    assert share is not None and 0 < share < 0.3  # "systemd" weighs most
    assert near_share(statistics, [plain, placed]) == 1.0  # its title names it
    assert near_share(KeywordStatistics(1000, {("words", "nowhere"): 0}), [plain]) is None
    assert NEAR_DEPTH == 10
