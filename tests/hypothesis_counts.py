"""The property suite's closing summary: how many examples each property ran, and in what time.

``tests/property/conftest.py`` counts the test cases Hypothesis ran for a test and leaves the
count on the test's report (``user_properties``, key ``EXAMPLES_KEY``). This plugin, loaded
by the root conftest, reads the reports wherever they end up: in the one process of a plain
run, or in the controller of a ``pytest -n`` run, where the workers' reports arrive (the
workers' own counts would otherwise never reach the terminal).
"""

from __future__ import annotations

from typing import Any, cast

import pytest

__all__ = ["EXAMPLES_KEY"]

#: ``(examples, seconds, profile)`` of one property, on its call report.
EXAMPLES_KEY = "hypothesis_examples"

_EXAMPLES: dict[str, tuple[int, float]] = {}
_PROFILES: set[str] = set()


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.when != "call":
        return
    for key, value in report.user_properties:
        if key == EXAMPLES_KEY:
            examples, seconds, profile = cast("tuple[int, float, str]", value)
            _EXAMPLES[report.nodeid] = (int(examples), float(seconds))
            _PROFILES.add(str(profile))


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if not _EXAMPLES:
        return
    tr = terminalreporter
    profile = ", ".join(repr(name) for name in sorted(_PROFILES))
    tr.write_sep("-", f"property examples (hypothesis profile {profile})")
    for nodeid in sorted(_EXAMPLES):
        examples, seconds = _EXAMPLES[nodeid]
        name = nodeid.split("tests/property/", 1)[-1]
        tr.write_line(f"{examples:>6}  {seconds:6.1f}s  {name}")
    total = sum(count for count, _ in _EXAMPLES.values())
    spent = sum(took for _, took in _EXAMPLES.values())
    tr.write_line(f"{total:>6}  {spent:6.1f}s  in total ({len(_EXAMPLES)} properties)")
