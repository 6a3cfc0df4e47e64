"""Under ``pytest -n --dist loadfile`` the workers get the costliest file first
(``tests/schedule.py``), not pytest-xdist's default of the file with most tests first: a
real pytest run with one worker, on a throwaway project whose cost table says the file of
one test is the long one."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_worker_runs_the_costliest_file_first_not_the_one_with_most_tests(
        tmp_path: Path) -> None:
    order = tmp_path / "order.txt"
    suite = tmp_path / "tests"
    suite.mkdir()
    record = ("import os\n\ndef _ran(name):\n"
              "    with open(os.environ['ORDER_LOG'], 'a') as out:\n"
              "        out.write(name + '\\n')\n")
    many = "".join(f"\n\ndef test_many_{i}():\n    _ran('many')\n" for i in range(6))
    (suite / "test_many.py").write_text(record + many, encoding="utf-8")
    (suite / "test_long.py").write_text(record + "\n\ndef test_long():\n    _ran('long')\n",
                                        encoding="utf-8")
    (suite / "test_new.py").write_text(record + "\n\ndef test_new():\n    _ran('new')\n",
                                       encoding="utf-8")
    (suite / "file_costs.tsv").write_text(
        "# seconds<TAB>test file\n1.0\ttests/test_many.py\n90.0\ttests/test_long.py\n",
        encoding="utf-8")
    (tmp_path / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    env = {**os.environ, "ORDER_LOG": str(order), "PYTHONPATH": str(ROOT)}
    env.pop("PYTEST_XDIST_WORKER", None)
    env.pop("KB_TEST_CPU_LOG", None)
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-n", "1", "--dist", "loadfile", "-p",
         "tests.schedule", "-p", "no:cacheprovider", "-q", "tests"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    ran = order.read_text(encoding="utf-8").split()
    # the unknown file first, then the long one, then the one with the most tests
    assert ran == ["new", "long"] + ["many"] * 6, ran
