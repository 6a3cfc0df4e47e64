"""The order test files go to the pytest-xdist workers (``tests/schedule.py``): costliest
first by the checked-in table, files it does not know before all, and a table that names
only files that exist."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cpu_log import costs_table
from tests.schedule import COSTS, file_order, read_costs

ROOT = Path(__file__).resolve().parents[2]


def test_files_go_costliest_first_and_unknown_files_before_all() -> None:
    files = ["tests/unit/a.py", "tests/e2e/b.py", "tests/new.py", "tests/cli/c.py",
             "tests/unit/d.py"]
    costs = {"tests/unit/a.py": 0.5, "tests/e2e/b.py": 90.0, "tests/cli/c.py": 12.0,
             "tests/unit/d.py": 0.5}
    assert file_order(files, costs) == ["tests/new.py", "tests/e2e/b.py", "tests/cli/c.py",
                                        "tests/unit/a.py", "tests/unit/d.py"]


def test_the_checked_in_table_names_existing_test_files_with_their_seconds() -> None:
    costs = read_costs(ROOT / COSTS)
    assert len(costs) > 100
    missing = [name for name in costs if not (ROOT / name).is_file()]
    assert missing == [], f"{COSTS} names files that are gone; rewrite it: {missing}"
    assert all(seconds >= 0 for seconds in costs.values())


def test_a_cpu_log_becomes_the_table_by_the_larger_of_wall_and_cpu(tmp_path: Path) -> None:
    log = tmp_path / "cpu.tsv"
    log.write_text(
        "tests/e2e/test_w.py::test_waits\t30.00\t0.50\t1.00\tgw0\t100.00\n"
        "tests/e2e/test_w.py::test_waits_more\t10.00\t0.10\t0.20\tgw0\t130.00\n"
        "tests/integration/test_c.py::test_embeds\t8.00\t20.00\t0.00\tgw1\t100.00\n"
        "tests/unit/test_u.py::test_quick\t0.10\t0.05\t0.00\tgw1\t108.00\n",
        encoding="utf-8")
    table = tmp_path / "file_costs.tsv"
    table.write_text(costs_table(log), encoding="utf-8")
    assert read_costs(table) == {"tests/e2e/test_w.py": 40.0,
                                 "tests/integration/test_c.py": 20.0,
                                 "tests/unit/test_u.py": 0.1}
    assert list(read_costs(table)) == ["tests/e2e/test_w.py", "tests/integration/test_c.py",
                                       "tests/unit/test_u.py"]


def test_a_damaged_table_line_is_named_with_the_remedy(tmp_path: Path) -> None:
    table = tmp_path / "file_costs.tsv"
    table.write_text("# header\n12.5\ttests/e2e/a.py\n12,5 tests/e2e/b.py\n", encoding="utf-8")
    with pytest.raises(pytest.UsageError, match=r"file_costs.tsv:3: expected .*--costs"):
        read_costs(table)
