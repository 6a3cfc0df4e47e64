"""How many IVF partitions a query probes (decision 0058's addendum): half of them, as
decision 0019 measured, until the probed partitions would hold more than
``ANN_PROBED_ROWS`` rows; a million-row index probes about a tenth."""

from __future__ import annotations

import pytest

from kbmcp_adapters.vectors import ann_policy


@pytest.mark.parametrize(("trained", "probed"), [(20_000, 71), (101_017, 159), (200_000, 224)])
def test_an_index_up_to_200k_rows_probes_half_its_partitions(trained: int, probed: int) -> None:
    assert ann_policy.probes(trained) == probed == -(-ann_policy.partitions(trained) // 2)


def test_a_million_row_index_probes_about_100k_rows() -> None:
    trained = 998_691
    probed = ann_policy.probes(trained)

    assert probed == 101  # of 999 partitions: 500 before
    assert probed * trained / ann_policy.partitions(trained) == pytest.approx(101_000, rel=0.01)


def test_a_huge_index_still_probes_at_least_the_minimum() -> None:
    assert ann_policy.probes(10**9) == ann_policy.ANN_MIN_PROBES
