"""Unit tests of the shared chunking helpers and the heading clean-up."""

from __future__ import annotations

import math

import pytest

from kbmcp_adapters.parsers.chunking import (
    MAX_CHARS_PER_TOKEN,
    Unit,
    fit_heading_path,
    join_lines,
    merge_tiny,
    paragraph_blocks,
    split_range,
)
from kbmcp_adapters.parsers.headings import clean_heading, normalise_heading, title_from_path
from kbmcp_core.models import whole_text_of
from kbmcp_core.ports import ChunkBudget


def words_counter(text: str) -> int:
    """A stand-in tokenizer: 1.3 tokens per word, plus two special tokens."""
    return math.ceil(len(text.split()) * 1.3) + 2


def budget(max_tokens: int = 40, min_tokens: int = 0) -> ChunkBudget:
    return ChunkBudget(max_tokens=max_tokens, min_tokens=min_tokens, counter=words_counter)


def paragraph(n: int, words: int = 8) -> str:
    return " ".join(f"p{n}w{i}" for i in range(words))


# -- heading clean-up ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "clean"),
    [
        ("### `useState(initialState)` {/*usestate*/}", "useState(initialState)"),
        ("### Hook names always start with `use` {/*x*/}", "Hook names always start with use"),
        ("## **Bold** and [link](http://x) <Badge />", "Bold and link"),
        ("Title {#custom-id}", "Title"),
        ("`__init__` keeps _its_ underscores", "__init__ keeps its underscores"),
        (r"A \*literal\* star", "A *literal* star"),
        ("## Closing hashes ##", "Closing hashes"),
        ("  lots   of\tspace  ", "lots of space"),
        ("![logo](a.png) Release <CanaryBadge /> notes", "logo Release notes"),
    ],
)
def test_clean_heading_reduces_markup_to_what_a_reader_sees(raw: str, clean: str) -> None:
    assert clean_heading(raw) == clean


def test_normalised_headings_compare_case_and_space_insensitively() -> None:
    assert normalise_heading("## `useEffect`  Caveats {/*c*/}") == normalise_heading(
        "useeffect caveats"
    )


@pytest.mark.parametrize(
    ("path", "title"),
    [("notes/my-first_note.md", "my first note"), ("README", "README"), ("a/b.c.txt", "b.c")],
)
def test_title_from_path_humanises_the_file_stem(path: str, title: str) -> None:
    assert title_from_path(path) == title


# -- splitting -------------------------------------------------------------------------


def test_paragraph_blocks_do_not_split_inside_a_fence() -> None:
    lines = ["intro", "", "```", "a", "", "b", "```", "", "outro"]
    fenced = [False, False, True, True, True, True, True, False, False]
    assert paragraph_blocks(lines, 0, 8, fenced) == [(0, 0), (2, 6), (8, 8)]
    assert paragraph_blocks(lines, 0, 8) == [(0, 0), (2, 3), (5, 6), (8, 8)]


def test_short_range_is_one_unit_with_tight_line_range() -> None:
    lines = ["", "", paragraph(1), paragraph(2), "", ""]
    units = split_range(lines, 0, 5, ("H",), budget(), label=7)
    assert [(u.start, u.end, u.label) for u in units] == [(2, 3, 7)]
    assert units[0].text == f"{paragraph(1)}\n{paragraph(2)}"


def test_long_range_splits_on_paragraphs_under_budget_and_loses_nothing() -> None:
    lines: list[str] = []
    for n in range(12):
        lines += [paragraph(n), ""]
    units = split_range(lines, 0, len(lines) - 1, ("Doc", "Section"), budget(40), label=0)
    assert len(units) > 1
    for unit in units:
        assert words_counter(whole_text_of(("Doc", "Section"), unit.text)) <= 40
        assert unit.text == join_lines(lines, unit.start, unit.end)
        assert unit.exact
    joined = "\n".join(u.text for u in units)
    assert all(paragraph(n) in joined for n in range(12))
    assert [u.start for u in units] == sorted(u.start for u in units)


def test_over_long_paragraph_splits_on_lines_then_words() -> None:
    long_line = " ".join(f"w{i}" for i in range(100))
    lines = ["short one", "short two", long_line]
    units = split_range(lines, 0, 2, (), budget(30), label=0)
    assert all(words_counter(u.text) <= 30 for u in units)
    assert units[0].text == "short one\nshort two"
    word_pieces = [u for u in units if not u.exact]
    assert {(u.start, u.end) for u in word_pieces} == {(2, 2)}
    assert " ".join(u.text for u in word_pieces) == long_line


def test_a_word_longer_than_the_budget_is_cut_on_characters() -> None:
    def char_counter(text: str) -> int:
        return len(text) + 2

    tight = ChunkBudget(max_tokens=12, min_tokens=0, counter=char_counter)
    units = split_range(["x" * 35], 0, 0, (), tight, label=0)
    assert "".join(u.text for u in units) == "x" * 35
    assert all(char_counter(u.text) <= 12 for u in units)


def test_a_blob_of_few_tokens_is_still_capped_in_characters() -> None:
    one_token_per_word = ChunkBudget(max_tokens=64, min_tokens=0, counter=lambda t: 3)
    blob = "data:image/png;base64," + "iVBORw0KGgo" * 2000
    units = split_range(["Intro.", "", blob], 0, 2, (), one_token_per_word, label=0)
    assert units[0].text == "Intro."
    assert all(len(u.text) <= 64 * MAX_CHARS_PER_TOKEN for u in units)
    assert "".join(u.text for u in units[1:]) == blob


def test_a_budget_that_cannot_hold_one_character_is_a_clear_error() -> None:
    hopeless = ChunkBudget(max_tokens=1, min_tokens=0, counter=lambda text: len(text) + 2)
    with pytest.raises(ValueError, match="cannot hold any text"):
        split_range(["abc"], 0, 0, (), hopeless, label=0)


def test_fit_heading_path_keeps_a_sane_trail_and_shortens_an_absurd_one() -> None:
    assert fit_heading_path(("A", "B"), budget(40)) == ("A", "B")
    huge = ("Outer",) + (" ".join(["word"] * 200),)
    fitted = fit_heading_path(huge, budget(40))
    assert len(fitted) == 1
    assert words_counter(whole_text_of(fitted, "")) <= 20


# -- merging ---------------------------------------------------------------------------


def _units(lines: list[str], labels: list[int]) -> list[Unit]:
    return [
        Unit(i, i, label, lines[i], words_counter(lines[i]))
        for i, label in enumerate(labels)
        if lines[i]
    ]


def test_tiny_unit_joins_previous_of_its_own_label_first() -> None:
    lines = [paragraph(0, 10), "tiny", paragraph(2, 10)]
    b = budget(60, min_tokens=6)
    merged = merge_tiny(
        _units(lines, [0, 0, 1]),
        b,
        render=lambda s, e, label: join_lines(lines, s, e),
        path_of=lambda label: (),
    )
    assert [(u.start, u.end, u.label) for u in merged] == [(0, 1, 0), (2, 2, 1)]


def test_tiny_parent_folds_forward_into_its_child_keeping_the_child_label() -> None:
    lines = ["tiny", paragraph(1, 10), paragraph(2, 10)]
    b = budget(60, min_tokens=6)
    merged = merge_tiny(
        _units(lines, [0, 1, 2]),
        b,
        render=lambda s, e, label: join_lines(lines, s, e),
        path_of=lambda label: (),
        absorbs=lambda tiny, nxt: nxt == tiny + 1,
    )
    assert [(u.start, u.end, u.label) for u in merged] == [(0, 1, 1), (2, 2, 2)]


def test_tiny_unit_stays_alone_when_no_merge_fits_or_labels_must_not_mix() -> None:
    lines = [paragraph(0, 22), "tiny", paragraph(2, 22)]  # 31 tokens each, 32 with "tiny"
    b = budget(31, min_tokens=6)
    merged = merge_tiny(
        _units(lines, [0, 1, 2]),
        b,
        render=lambda s, e, label: join_lines(lines, s, e),
        path_of=lambda label: (),
    )
    assert len(merged) == 3
    roomy = budget(200, min_tokens=6)
    kept_apart = merge_tiny(
        _units(lines, [0, 1, 2]),
        roomy,
        render=lambda s, e, label: join_lines(lines, s, e),
        path_of=lambda label: (),
        across_labels=False,
    )
    assert len(kept_apart) == 3
