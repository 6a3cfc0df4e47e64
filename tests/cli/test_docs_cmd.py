"""``kb-mcp docs [TOPIC]``: the docs that ship with the install, printed as they are, and
every pointer to them in messages, the init template and ``--help`` names the command."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import click
from click.testing import CliRunner

from kbmcp_cli.docs_cmd import PACKAGED, docs_root, resolve, topics
from kbmcp_cli.init_cmd import config_text
from kbmcp_cli.main import cli

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
_POINTER = re.compile(r"`kb-mcp docs ([a-z0-9][\w/-]*)`")  # not TOPIC or NNNN


def run(*args: str) -> tuple[int, str, str]:
    done = CliRunner().invoke(cli, ["docs", *args], prog_name="kb-mcp")
    return done.exit_code, done.stdout, done.stderr


def test_a_topic_prints_the_same_text_as_its_page() -> None:
    code, out, _ = run("configuration")
    assert code == 0
    assert out == (DOCS / "configuration.md").read_text(encoding="utf-8")


def test_without_a_topic_every_page_is_listed_with_its_title() -> None:
    code, out, _ = run()
    assert code == 0
    for page in DOCS.glob("*.md"):
        title = page.read_text(encoding="utf-8").splitlines()[0].removeprefix("# ")
        assert re.search(rf"^  {re.escape(page.stem)} +{re.escape(title)}$", out, re.M), page
    assert "`kb-mcp docs decisions`" in out


def test_a_decision_is_printed_by_its_number() -> None:
    record = next(DOCS.glob("decisions/0021-*.md"))
    for name in ("0021", "decisions/0021", f"decisions/{record.stem}", "docs/usage.md"):
        code, out, _ = run(name)
        assert code == 0, name
        expected = DOCS / "usage.md" if name.endswith("usage.md") else record
        assert out == expected.read_text(encoding="utf-8")


def test_an_unknown_topic_is_refused_with_the_nearest_one() -> None:
    code, out, err = run("configuratoin")
    assert code == 2 and out == ""
    assert "no topic 'configuratoin' (did you mean `kb-mcp docs configuration`?)" in err


def test_an_installed_wheel_reads_its_packaged_copy_first(tmp_path: Path) -> None:
    """The wheel's ``kbmcp_cli/_docs`` wins over a ``docs/`` beside the package; without
    either there are no docs (the command then says so)."""
    package = tmp_path / "site" / "kbmcp_cli"
    package.mkdir(parents=True)
    assert docs_root(package) is None
    (tmp_path / "site" / "docs").mkdir()
    (tmp_path / "site" / "docs" / "configuration.md").write_text("checkout\n")
    assert docs_root(package) == tmp_path / "site" / "docs"
    shutil.copytree(DOCS, package / PACKAGED)
    assert docs_root(package) == package / PACKAGED


def test_every_pointer_names_a_topic_that_exists() -> None:
    """Messages, the template `kb-mcp init` writes and `--help` say `kb-mcp docs X`, never
    a docs/ file a pipx user does not have, and each X is a topic."""
    found = topics(DOCS)
    template = config_text()
    assert "docs/" not in template and "`kb-mcp docs configuration`" in template
    sources = [p.read_text(encoding="utf-8") for package in ("kbmcp_cli", "kbmcp_adapters",
                                                             "kbmcp_core")
               for p in (ROOT / package).rglob("*.py")]
    named = {n for text in [template, *sources] for n in _POINTER.findall(text)}
    assert "configuration" in named
    assert [n for n in named if resolve(n, found) is None] == []
    for name, command in cli.commands.items():
        ctx = click.Context(command, info_name=name)
        assert "docs/" not in command.get_help(ctx), name

