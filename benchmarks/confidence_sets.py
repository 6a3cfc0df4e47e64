"""The folders ``low_confidence`` is fitted on, in one list (decision 0056, fifth addendum).

``python -m benchmarks.confidence_fit OUT.jsonl --all --fit`` reads this list: for each
set it writes a ``kb.toml`` (the folder, its index under ``--work``, the formats it
needs, the model), builds the two folders that are built rather than read in place
(``news`` by ``benchmarks.release_news``, the Debian FAQs by ``benchmarks.debian_faq``)
when they are missing, then indexes every folder (incrementally: nothing is embedded
again unless the code or the folder changed), collects the evidence and fits. The index
folders are those the lab log has always used under ``/tmp/kb-mcp-eval-sets``, so an
index built by hand is reused. A set named ``FOLDER@packaged`` is FOLDER searched with
the packaged MiniLM file the in-process tests load.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

#: The MiniLM file the in-process tests load; the fit must hold for it too.
PACKAGED_MODEL = "kb-mcp/all-MiniLM-L6-v2-int8"
#: Where the folders' indexes (and the built folders) go unless ``--work`` says.
WORK = Path("/tmp/kb-mcp-eval-sets")
REPO = Path(__file__).resolve().parents[1]


@dataclass(frozen=True, slots=True)
class FitSet:
    """One set of the fit: its folder, where its index goes (below the work folder), its
    question files, the formats it needs (empty: the default) and the model (None: the
    default). Paths may start with ``{repo}``, ``{work}`` or ``{dev_eval}``."""

    name: str
    folder: str
    index: str
    goldens: tuple[str, ...]
    formats: tuple[str, ...] = ()
    model: str | None = None
    #: the ``benchmarks`` module that builds the folder into ``{work}/<built>`` if missing
    built: str | None = None


def _eval_set(name: str, folder: str, *formats: str) -> FitSet:
    return FitSet(name, folder, name, (f"{{repo}}/benchmarks/eval-sets/{name}/golden.yml",),
                  formats)


_NO_ANSWER = "{repo}/tests/fixtures/no-answer"
SETS: tuple[FitSet, ...] = (
    _eval_set("pip", "/usr/share/doc/python3-pip/html", "md", "rst"),
    _eval_set("util-linux", "/usr/share/doc/util-linux", "txt"),
    _eval_set("git-relnotes", "/usr/share/doc/git/RelNotes", "txt"),
    _eval_set("valgrind", "/usr/share/doc/valgrind/html", "html"),
    FitSet("news", "{work}/news/corpus", "news/idx",
           ("{repo}/benchmarks/eval-sets/news/golden.yml",), ("txt",), built="news"),
    FitSet("debfaq", "{work}/debfaq/corpus", "debfaq/idx", ("{work}/debfaq/both.yml",),
           ("md", "txt", "html"), built="debfaq"),
    FitSet("faq", "{dev_eval}/faq/corpus", "faq",
           ("{dev_eval}/faq/golden.yml", f"{_NO_ANSWER}/faq.yml")),
    FitSet("faq@packaged", "{dev_eval}/faq/corpus", "faq-packaged",
           ("{dev_eval}/faq/golden.yml", f"{_NO_ANSWER}/faq.yml"), model=PACKAGED_MODEL),
    FitSet("handbook", "{repo}/tests/fixtures/eval-kb", "eval-kb",
           ("{repo}/tests/fixtures/eval-kb.golden.yml", f"{_NO_ANSWER}/eval-kb.yml")),
    FitSet("handbook@packaged", "{repo}/tests/fixtures/eval-kb", "eval-kb-packaged",
           ("{repo}/tests/fixtures/eval-kb.golden.yml", f"{_NO_ANSWER}/eval-kb.yml"),
           model=PACKAGED_MODEL),
    FitSet("react-en", "{dev_eval}/corpus-en", "react-en",
           ("{dev_eval}/golden-en.yml", f"{_NO_ANSWER}/react-en.yml")),
)


def _builders() -> dict[str, Callable[[list[str]], int]]:
    from benchmarks import debian_faq, release_news

    return {"news": release_news.main, "debfaq": debian_faq.main}


def config_text(s: FitSet, roots: Mapping[str, str]) -> str:
    """The set's ``kb.toml``: its folder, its index below the work folder, formats, model."""
    lines = [f"kb_path = {json.dumps(s.folder.format(**roots))}",
             f"index_dir = {json.dumps(str(Path(roots['work']) / s.index))}"]
    if s.formats:
        lines += ["", "[parsers]", f"enabled = {json.dumps(list(s.formats))}"]
    if s.model:
        lines += ["", "[embedding]", f"model = {json.dumps(s.model)}"]
    return "\n".join(lines) + "\n"


def prepare(work: Path, dev_eval: Path, *, sets: tuple[FitSet, ...] = SETS,
            builders: Mapping[str, Callable[[list[str]], int]] | None = None) -> list[str]:
    """Write every set's ``kb.toml`` into ``work/fit-configs``, build a missing built
    folder, and return the sets as ``confidence_fit`` takes them
    (``NAME=CONFIG:GOLDEN[,GOLDEN...]``)."""
    roots = {"repo": str(REPO), "work": str(work), "dev_eval": str(dev_eval)}
    configs = work / "fit-configs"
    configs.mkdir(parents=True, exist_ok=True)
    build = builders
    specs: list[str] = []
    for s in sets:
        if s.built and not (work / s.built / "corpus").is_dir():
            build = build if build is not None else _builders()
            if build[s.built]([str(work / s.built)]) != 0:
                raise SystemExit(f"could not build the {s.name} folder into {work / s.built}")
        config = configs / f"{s.name.replace('@', '-')}.toml"
        config.write_text(config_text(s, roots), encoding="utf-8")
        goldens = ",".join(g.format(**roots) for g in s.goldens)
        specs.append(f"{s.name}={config}:{goldens}")
    return specs
