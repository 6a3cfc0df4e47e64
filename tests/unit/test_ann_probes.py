"""How many IVF partitions a query probes (decision 0058's addendum): half of them, as
decision 0019 measured, until the probed partitions would hold more than
``ANN_PROBED_ROWS`` rows; a million-row index probes about a tenth. Under a prefilter,
enough to scan the rows that pass (decision 0058's addendum "the real model at 100k": a
folder about one subject sits in partitions of its own, away from the query's nearest)."""

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


class Recorded:
    """The query builder's settings a search asked for."""

    def __init__(self) -> None:
        self.asked: dict[str, int] = {}

    def nprobes(self, n: int) -> Recorded:
        self.asked["nprobes"] = n
        return self

    def maximum_nprobes(self, n: int) -> Recorded:
        self.asked["maximum_nprobes"] = n
        return self

    def refine_factor(self, n: int) -> Recorded:
        self.asked["refine"] = n
        return self


@pytest.mark.parametrize(("trained", "passing"), [(101_017, 10_010), (998_691, 99_261),
                                                  (998_691, 1_000)])
def test_a_filter_keeping_no_more_rows_than_a_query_scans_probes_every_partition(
        trained: int, passing: int) -> None:
    """The real model's folder filter at 100k chunks found 0.875 of exact search's ten
    probed as unfiltered (159 of 318 partitions) and 0.993 probing all of them."""
    query = Recorded()
    ann_policy.probed(query, trained, passing=passing)  # type: ignore[type-var]
    every = ann_policy.partitions(trained)
    assert query.asked == {"nprobes": every, "maximum_nprobes": every,
                           "refine": ann_policy.ANN_REFINE}


def test_a_filter_keeping_most_of_a_large_table_probes_in_proportion() -> None:
    trained, passing = 998_691, 500_000
    unfiltered = ann_policy.probes(trained)
    probed = ann_policy.filtered_probes(trained, passing)
    assert unfiltered < probed < ann_policy.partitions(trained)
    assert probed * passing / ann_policy.partitions(trained) == pytest.approx(
        unfiltered * trained / ann_policy.partitions(trained), rel=0.01)


def test_an_unfiltered_search_probes_as_before() -> None:
    query = Recorded()
    ann_policy.probed(query, 101_017)  # type: ignore[type-var]
    assert query.asked["nprobes"] == ann_policy.probes(101_017) == 159


def test_a_table_without_an_index_is_searched_as_asked() -> None:
    query = Recorded()
    assert ann_policy.probed(query, None) is query  # type: ignore[type-var]
    assert query.asked == {}


class Training:
    """A table of ``rows`` rows that records the index it is asked to build."""

    def __init__(self, rows: int) -> None:
        self.rows = rows
        self.built: dict[str, object] = {}

    def count_rows(self) -> int:
        return self.rows

    def create_index(self, column: str, *, config: object, name: str) -> None:
        self.built = {"column": column, "config": config, "name": name}


def _trained_on(rows: int) -> tuple[int, int]:
    """(partitions, rows a partition) of the IVF_PQ index ``train`` asks LanceDB for."""
    table = Training(rows)
    ann_policy.train(table, "vector", 384)  # type: ignore[arg-type]
    config = table.built["config"]
    return config.num_partitions, config.sample_rate  # type: ignore[attr-defined]


def test_a_million_row_table_trains_on_a_sample_of_at_most_65k_vectors() -> None:
    """LanceDB's own rate (256 a partition) reads and holds 255,744 of a million rows'
    vectors while KMeans trains (decision 0058's addendum "the training's sample")."""
    parts, rate = _trained_on(998_691)
    assert parts == 999
    assert parts * rate <= 65_536  # LanceDB's own: 255,744
    assert rate >= 64


@pytest.mark.parametrize("rows", [20_000, 60_000])
def test_a_small_table_trains_on_lancedbs_own_sample(rows: int) -> None:
    assert _trained_on(rows)[1] == 256


def test_the_sample_shrinks_with_the_table_and_keeps_a_floor_per_partition() -> None:
    rates = [_trained_on(rows)[1] for rows in (101_017, 300_000, 998_691, 10**8)]
    assert rates == sorted(rates, reverse=True)
    assert rates[0] > rates[-1] == 64
