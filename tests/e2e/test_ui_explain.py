"""The /ui page's "Explain" box and query syntax in a real browser (decision 0035): each hit
opens the numbers behind its score, and the status line says what the query excluded."""

from __future__ import annotations

import re
from typing import Any

from tests.e2e.http_support import Served
from tests.e2e.ui_support import search


def test_explain_opens_the_numbers_behind_each_score(served: Served, page: Any) -> None:
    page.goto(f"http://127.0.0.1:{served.port}/ui")
    hits = search(page, "signing keys rotation")
    assert hits.first.locator("details.explain").count() == 0  # off by default
    page.check("#explain")
    hits = search(page, "signing keys rotation")
    hits.first.locator("details.explain").wait_for()
    hits.first.locator("details.explain summary").click()
    lines = hits.first.locator("details.explain div").all_inner_texts()
    score = float(re.search(r"score (\d+\.\d+)",
                            hits.first.locator(".where").inner_text()).group(1))  # type: ignore[union-attr]
    total = next(line for line in lines if line.startswith("score = "))
    assert abs(float(total.split()[2]) - score) < 1e-4, (lines, score)
    assert any(line.startswith(("lexical #", "vector #")) for line in lines), lines
    assert "searched" in page.locator("#search-status").inner_text()
    assert page.problems == []


def test_the_status_says_what_the_query_excluded(served: Served, page: Any) -> None:
    page.goto(f"http://127.0.0.1:{served.port}/ui")
    search(page, "signing keys -zebrafish")
    assert "excluded: zebrafish" in page.locator("#search-status").inner_text()
    assert page.problems == []
    page.fill("#q", '-signing -keys')
    page.locator("#error:not([hidden])").wait_for()
    assert "the query only excludes at character 1" in page.locator("#error").inner_text()
