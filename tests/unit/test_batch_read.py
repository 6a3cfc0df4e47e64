"""``kbmcp_core.batch_read``: which documents a batch reads, in what order, within what budget."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, cast

import pytest

from kbmcp_core.batch_read import MAX_BATCH_DOCUMENTS, read_batch
from kbmcp_core.errors import InvalidQuery, PathRefused, ReadBusy, StoreError
from kbmcp_core.offer import OfferRules
from kbmcp_core.reading import TEXT_READ_CAP


@dataclass
class Row:
    path: str
    size_bytes: int | None


class Store:
    def __init__(self, sizes: dict[str, int | None]) -> None:
        self.sizes = sizes

    def documents(self, paths: list[str]) -> list[Row]:
        return [Row(p, self.sizes[p]) for p in paths if p in self.sizes]


class Rules:
    """What a batch asks of ``OfferRules``: the offer, and the recorded sizes."""

    def __init__(self, offered: list[str], sizes: dict[str, int | None]) -> None:
        self.offered = offered
        self.store = Store(sizes)

    def offered_paths(self) -> list[str]:
        return sorted(self.offered)

    def is_offered(self, path: str) -> bool:
        return path in self.offered


def batch(texts: dict[str, str], *, fail: dict[str, Exception] | None = None,
          sizes: dict[str, int | None] | None = None, **kwargs: Any) -> Any:
    reads: list[str] = []

    def read(path: str) -> tuple[str, str]:
        reads.append(path)
        if fail and path in fail:
            raise fail[path]
        return path, texts[path]

    recorded: dict[str, int | None] = dict(sizes) if sizes is not None else {
        p: len(t.encode("utf-8")) for p, t in texts.items()}
    rules = Rules(list(texts), recorded)
    result = read_batch(cast(OfferRules, rules), read, lambda d: d[1], **kwargs)
    return result, reads


def test_paths_are_read_in_order_once_and_a_smaller_one_still_fits_after_a_big_one() -> None:
    texts = {"a.md": "a" * 40, "big.md": "b" * 100, "c.md": "c" * 50}
    got, reads = batch(texts, paths=["a.md", "big.md", "a.md", "c.md"], max_chars=95)
    assert [d[0] for d in got.documents] == ["a.md", "c.md"] and got.chars == 90
    assert [x.path for x in got.left_out] == ["big.md"]
    assert "larger than the whole budget (95)" in got.left_out[0].reason
    assert reads == ["a.md", "big.md", "c.md"]  # one read each


def test_a_spent_budget_leaves_the_rest_out_without_reading_them() -> None:
    texts = {"a.md": "x" * 10, "b.md": "y" * 5, "c.md": "z" * 5}
    got, reads = batch(texts, paths=["a.md", "b.md", "c.md"], max_chars=10)
    assert [x.reason for x in got.left_out] == ["the budget of 10 characters is used up"] * 2
    assert reads == ["a.md"]


def test_the_bytes_sent_stay_under_the_read_cap_whatever_the_characters() -> None:
    wide = "é" * (TEXT_READ_CAP // 3)  # two bytes a character: 2/3 of the cap each
    got, _ = batch({"a.md": wide, "b.md": wide}, glob="*", max_chars=TEXT_READ_CAP)
    assert [d[0] for d in got.documents] == ["a.md"]
    assert "were left" in got.left_out[0].reason


def test_bad_paths_are_errors_of_their_own_and_a_store_failure_fails_the_batch() -> None:
    texts = {"a.md": "fine", "busy.md": "?"}
    got, _ = batch(texts, paths=["../x.md", "missing.md", "busy.md", "a.md"],
                   fail={"busy.md": ReadBusy("all slots taken")})
    assert [d[0] for d in got.documents] == ["a.md"]
    assert [(e.path, e.code) for e in got.errors] == [
        ("../x.md", "path_refused"), ("missing.md", "path_refused"), ("busy.md", "server_busy")]
    assert "not offered" in got.errors[1].message
    with pytest.raises(StoreError):
        batch(texts, paths=["a.md"], fail={"a.md": StoreError("down")})
    refused, _ = batch(texts, paths=["a.md"], fail={"a.md": PathRefused("a.md", "a link")})
    assert refused.errors[0].message == "a link"


def test_a_glob_reads_the_first_offered_matches_and_says_how_many_matched() -> None:
    texts = {f"n/{i:03d}.md": "t" for i in range(MAX_BATCH_DOCUMENTS + 5)} | {"x.md": "t"}
    got, _ = batch(texts, glob="n/*")
    assert got.matched == MAX_BATCH_DOCUMENTS + 5
    assert len(got.documents) == MAX_BATCH_DOCUMENTS and got.documents[0][0] == "n/000.md"
    assert "matched 55 documents" in got.notices[0]
    none, _ = batch(texts, glob="zzz*")
    assert none.documents == () and none.matched == 0 and "no offered document" in \
        none.notices[0]


@pytest.mark.parametrize(("kwargs", "message"), [
    ({}, "not neither"),
    ({"paths": ["a.md"], "glob": "*"}, "not both"),
    ({"paths": []}, "give 1 to 50"),
    ({"glob": " "}, "must not be empty"),
    ({"glob": "*", "max_chars": 0}, "between 1 and"),
    ({"glob": "*", "max_chars": TEXT_READ_CAP + 1}, "between 1 and"),
])
def test_a_malformed_batch_is_invalid(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(InvalidQuery, match=message):
        batch({"a.md": "t"}, **kwargs)


def test_a_text_document_past_the_read_cap_is_left_out_without_being_read() -> None:
    texts = {"huge.md": "h", "small.md": "s", "scan.pdf": "p" * 10, "grown.md": "g" * 20}
    sizes: dict[str, int | None] = {"huge.md": 2 * TEXT_READ_CAP, "small.md": 1,
                                    "scan.pdf": 40 * TEXT_READ_CAP, "grown.md": None}
    got, reads = batch(texts, glob="*", sizes=sizes)
    assert [x.path for x in got.left_out] == ["huge.md"]
    assert "read it in ranges with get_document" in got.left_out[0].reason
    # a PDF's file size says nothing of its text, and an unknown size is measured: both read
    assert reads == ["grown.md", "scan.pdf", "small.md"]
    assert {d[0] for d in got.documents} == {"grown.md", "scan.pdf", "small.md"}
