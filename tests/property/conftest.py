"""Hypothesis profiles for the property suite, and a count of the examples it ran.

Profiles (choose with ``HYPOTHESIS_PROFILE``; ``ci`` is the default):

* ``ci``: derandomized (the same examples on every run, so CI is stable), no example
  database, no deadline (a shared 2-core machine has noisy timings). Every property asks
  for ``budget(n)`` examples; the whole suite runs a few thousand in about a minute.
* ``thorough``: ten times the examples, random seeds, for a long local hunt.
* ``quick``: a tenth of the examples, for iterating on a property.

The summary at the end of the run prints the examples each property ran, and the total.
"""

from __future__ import annotations

import os
import time
from collections.abc import Generator
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis.statistics import collector

_COMMON: dict[str, Any] = {
    "deadline": None,
    "print_blob": True,
    "suppress_health_check": [HealthCheck.too_slow, HealthCheck.data_too_large],
}
settings.register_profile("ci", max_examples=100, derandomize=True, database=None, **_COMMON)
settings.register_profile("thorough", max_examples=1000, **_COMMON)
settings.register_profile("quick", max_examples=10, derandomize=True, database=None, **_COMMON)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

_EXAMPLES: dict[str, int] = {}
_SECONDS: dict[str, float] = {}


@pytest.hookimpl(hookwrapper=True, trylast=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, None, None]:
    """Innermost wrapper: count the test cases Hypothesis ran, then pass the statistics on
    to Hypothesis's own pytest plugin (which set the collector just outside this one)."""
    outer = collector.value

    def note(stats: dict[str, Any]) -> None:
        runs = sum(len(phase.get("test-cases", ())) for key, phase in stats.items()
                   if key.endswith("-phase") and isinstance(phase, dict))
        _EXAMPLES[item.nodeid] = _EXAMPLES.get(item.nodeid, 0) + runs
        if outer is not None:
            outer(stats)

    started = time.monotonic()
    with collector.with_value(note):  # type: ignore[arg-type]
        yield
    if item.nodeid in _EXAMPLES:
        _SECONDS[item.nodeid] = time.monotonic() - started


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if not _EXAMPLES:
        return
    tr = terminalreporter
    profile = settings.get_current_profile_name()
    tr.write_sep("-", f"property examples (hypothesis profile {profile!r})")
    for nodeid in sorted(_EXAMPLES):
        name = nodeid.split("tests/property/", 1)[-1]
        tr.write_line(f"{_EXAMPLES[nodeid]:>6}  {_SECONDS.get(nodeid, 0.0):6.1f}s  {name}")
    total = sum(_EXAMPLES.values())
    seconds = sum(_SECONDS.values())
    tr.write_line(f"{total:>6}  {seconds:6.1f}s  in total ({len(_EXAMPLES)} properties)")
