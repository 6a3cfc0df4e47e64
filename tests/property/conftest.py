"""Hypothesis profiles for the property suite, and a count of the examples it ran.

Profiles (choose with ``HYPOTHESIS_PROFILE``; ``ci`` is the default):

* ``ci``: derandomized (the same examples on every run, so CI is stable), no example
  database, no deadline (a shared 2-core machine has noisy timings). Every property asks
  for ``budget(n)`` examples; the whole property suite runs about 9,000 (about 90 CPU
  seconds on a 2-core machine, December 2026; the summary below prints the real counts).
* ``thorough``: ten times the examples, random seeds, for a long local hunt.
* ``quick``: a tenth of the examples, for iterating on a property.

The summary at the end of the run prints the examples each property ran, and the total
(``tests/hypothesis_counts.py``; also under ``pytest -n``, where the workers run them).
"""

from __future__ import annotations

import os
import time
from collections.abc import Generator
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis.statistics import collector

from tests.hypothesis_counts import EXAMPLES_KEY

_COMMON: dict[str, Any] = {
    "deadline": None,
    "print_blob": True,
    "suppress_health_check": [HealthCheck.too_slow, HealthCheck.data_too_large],
}
settings.register_profile("ci", max_examples=100, derandomize=True, database=None, **_COMMON)
settings.register_profile("thorough", max_examples=1000, **_COMMON)
settings.register_profile("quick", max_examples=10, derandomize=True, database=None, **_COMMON)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


@pytest.hookimpl(hookwrapper=True, trylast=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, None, None]:
    """Innermost wrapper: count the test cases Hypothesis ran, then pass the statistics on
    to Hypothesis's own pytest plugin (which set the collector just outside this one).
    The count goes on the test's report, for the summary (``tests/hypothesis_counts.py``)."""
    outer = collector.value
    runs: int | None = None

    def note(stats: dict[str, Any]) -> None:
        nonlocal runs
        runs = (runs or 0) + sum(len(phase.get("test-cases", ()))
                                 for key, phase in stats.items()
                                 if key.endswith("-phase") and isinstance(phase, dict))
        if outer is not None:
            outer(stats)

    started = time.monotonic()
    with collector.with_value(note):  # type: ignore[arg-type]
        yield
    if runs is not None:
        item.user_properties.append((EXAMPLES_KEY, (runs, time.monotonic() - started,
                                                    settings.get_current_profile_name())))
