"""The fit of ``low_confidence`` in one command (``benchmarks/confidence_sets.py``; decision
0056, fifth addendum): every set's knowledge base written where the lab log keeps it, the
built folders built only when missing."""

from __future__ import annotations

import tomllib
from pathlib import Path

from benchmarks.confidence_fit import folder_of
from benchmarks.confidence_sets import PACKAGED_MODEL, REPO, SETS, prepare


def test_every_set_of_the_fit_gets_a_config_and_its_question_files(tmp_path: Path) -> None:
    work, dev = tmp_path / "work", tmp_path / "dev-eval"
    for built in ("news", "debfaq"):
        (work / built / "corpus").mkdir(parents=True)
    specs = prepare(work, dev, builders={})  # both folders there: nothing is built
    names = [spec.partition("=")[0] for spec in specs]
    assert names == [s.name for s in SETS]
    assert {folder_of(n) for n in names} == {"pip", "util-linux", "git-relnotes", "valgrind",
                                             "news", "debfaq", "faq", "handbook", "react-en"}
    by_name = {spec.partition("=")[0]: spec.partition("=")[2] for spec in specs}
    config, _, goldens = by_name["faq@packaged"].partition(":")
    faq = tomllib.loads(Path(config).read_text(encoding="utf-8"))
    assert faq == {"kb_path": f"{dev}/faq/corpus", "index_dir": f"{work}/faq-packaged",
                   "embedding": {"model": PACKAGED_MODEL}}
    assert goldens.split(",") == [f"{dev}/faq/golden.yml",
                                  f"{REPO}/tests/fixtures/no-answer/faq.yml"]
    news = tomllib.loads(Path(by_name["news"].partition(":")[0]).read_text(encoding="utf-8"))
    assert news == {"kb_path": f"{work}/news/corpus", "index_dir": f"{work}/news/idx",
                    "parsers": {"enabled": ["txt"]}}
    for spec in specs:  # the repository's question files exist
        for golden in spec.partition(":")[2].split(","):
            if golden.startswith(str(REPO)):
                assert Path(golden).is_file(), golden


def test_a_missing_built_folder_is_built_once(tmp_path: Path) -> None:
    built: list[str] = []

    def build(argv: list[str]) -> int:
        built.append(argv[0])
        (Path(argv[0]) / "corpus").mkdir(parents=True)
        return 0

    work = tmp_path / "work"
    prepare(work, tmp_path / "dev-eval", builders={"news": build, "debfaq": build})
    prepare(work, tmp_path / "dev-eval", builders={"news": build, "debfaq": build})
    assert built == [str(work / "news"), str(work / "debfaq")]
