"""``kb-mcp docs [TOPIC]``: the user docs that ship with this kb-mcp, printed as they are.

One source (decision 0049): the wheel carries the checkout's ``docs/`` folder as package
data at ``kbmcp_cli/_docs/`` (``pyproject.toml`` maps it there; nothing is copied into the
tree), and an editable install or a checkout reads ``docs/`` beside the packages itself.
"""

from __future__ import annotations

import difflib
import re
from importlib import resources
from pathlib import Path

import click

#: Where the wheel puts the docs folder, inside the ``kbmcp_cli`` package.
PACKAGED = "_docs"
_DECISION = re.compile(r"(?:decisions/)?(\d{4})(?:-[\w-]*)?(?:\.md)?")


def docs_root(package_dir: Path | None = None) -> Path | None:
    """The folder of docs: the packaged copy of an installed wheel, else the checkout's
    ``docs/`` (an editable install), else None."""
    package = package_dir or Path(str(resources.files("kbmcp_cli")))
    for candidate in (package / PACKAGED, package.parent / "docs"):
        if (candidate / "configuration.md").is_file():
            return candidate
    return None


def topics(root: Path) -> dict[str, Path]:
    """Each topic's name and file: ``configuration`` for the pages, ``decisions`` for the
    decision index, ``decisions/NNNN-name`` for each record."""
    found = {p.stem: p for p in sorted(root.glob("*.md"))}
    decisions = root / "decisions"
    if (decisions / "README.md").is_file():
        found["decisions"] = decisions / "README.md"
    for record in sorted(decisions.glob("[0-9][0-9][0-9][0-9]-*.md")):
        found[f"decisions/{record.stem}"] = record
    return found


def resolve(name: str, found: dict[str, Path]) -> Path | None:
    """The file a topic names: its exact name, with or without ``.md``, or a decision by its
    number (``0021``, ``decisions/0021``)."""
    name = name.strip().removesuffix(".md").removeprefix("docs/")
    if name in found:
        return found[name]
    number = _DECISION.fullmatch(name)
    if number is not None:
        for topic, path in found.items():
            if topic.startswith(f"decisions/{number.group(1)}-"):
                return path
    return None


def title(path: Path) -> str:
    """A page's first heading."""
    with path.open(encoding="utf-8") as handle:
        for line in handle:
            if line.startswith("# "):
                return line[2:].strip()
    return ""


@click.command(short_help="Print a page of the docs (or list them).")
@click.argument("topic", required=False)
def docs(topic: str | None) -> None:
    """Print one page of the kb-mcp docs that came with this install, as plain text on
    stdout: `kb-mcp docs configuration` is every key of kb-mcp.toml. Without TOPIC, list
    the topics. Decision records are `kb-mcp docs decisions` (their index) and
    `kb-mcp docs NNNN` (one record by its number)."""
    root = docs_root()
    if root is None:
        raise click.ClickException("the docs are not installed with this kb-mcp")
    found = topics(root)
    if topic is None:
        pages = {name: path for name, path in found.items() if "/" not in name}
        width = max(len(name) for name in pages) + 2
        click.echo("Topics (`kb-mcp docs TOPIC` prints one):")
        for name, path in pages.items():
            click.echo(f"  {name.ljust(width)}{title(path)}")
        records = len(found) - len(pages)
        click.echo(f"\n{records} decision records: `kb-mcp docs decisions` lists them, "
                   "`kb-mcp docs NNNN` prints one.")
        return
    page = resolve(topic, found)
    if page is None:
        close = difflib.get_close_matches(topic, [n for n in found if "/" not in n], n=1)
        hint = f" (did you mean `kb-mcp docs {close[0]}`?)" if close else ""
        raise click.UsageError(f"no topic {topic!r}{hint}; `kb-mcp docs` lists them")
    click.echo(page.read_text(encoding="utf-8"), nl=False)
