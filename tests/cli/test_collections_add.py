"""``kb-mcp collections add/remove`` (decision 0051): a folder becomes a collection of the
user config in one command, used as the knowledge base it is: its own ``kb-mcp.toml``
(formats, exclusions) and its existing index, so adding an indexed folder re-embeds
nothing; ``remove`` takes it out and leaves the folder and its index alone."""

from __future__ import annotations

import json
import os
from pathlib import Path

from tests.cli.conftest import Invoke
from tests.conftest import write_files

#: the user's own config before any collection: its comment must survive both edits
USER_CONFIG = "# my kb-mcp settings, kept by hand\n"


def _user_config() -> Path:
    return Path(os.environ["XDG_CONFIG_HOME"]) / "kb-mcp" / "config.toml"


def _indexed_folder(kb_mcp: Invoke, root: Path) -> Path:
    """A folder with its own kb-mcp.toml enabling .txt (not a default format's only
    company: Markdown), indexed on its own."""
    folder = root / "Team Docs"
    write_files(folder, {
        "kb-mcp.toml": '[parsers]\nenabled = ["md", "txt"]\n',
        "guide.md": "# Guide\n\nThe deploy guide says to tag every release.\n",
        "notes.txt": "Plain notes: the rota of watering the garden changes weekly.\n"})
    first = kb_mcp("index", "--kb-path", str(folder), "--format", "json", "-q")
    assert first.exit_code == 0, first.output
    assert json.loads(first.stdout)["added"] == 2
    return folder


def test_adding_an_indexed_folder_reuses_its_index_and_its_formats(
        kb_mcp: Invoke, tmp_path: Path) -> None:
    folder = _indexed_folder(kb_mcp, tmp_path)
    added = kb_mcp("collections", "add", str(folder), "--name", "docs",
                   "--description", "The team's docs")
    assert added.exit_code == 0, added.output
    listed = kb_mcp("collections", "--format", "json")
    assert listed.exit_code == 0, listed.output
    (docs,) = json.loads(listed.stdout)["collections"]
    assert (docs["name"], docs["description"]) == ("docs", "The team's docs")
    assert (docs["document_count"], docs["ready"]) == (2, True)  # its index, as it is

    again = kb_mcp("index", "--collection", "docs", "--format", "json", "-q")
    assert again.exit_code == 0, again.output
    run = json.loads(again.stdout)  # a collection of one: a plain folder's summary
    assert (run["added"], run["unchanged"], run["deleted"]) == (0, 2, 0)
    assert run["chunks_embedded"] == 0  # nothing re-embedded
    assert not (_user_config().parent / ".kb-mcp").exists()  # no second index made
    found = kb_mcp("search", "watering rota", "--collection", "docs", "--format", "json",
                   "--mode", "lexical")
    assert found.exit_code == 0, found.output
    assert [h["path"] for h in json.loads(found.stdout)["results"]][:1] == ["notes.txt"]


def test_add_and_remove_edit_the_user_config_keeping_its_comments(
        kb_mcp: Invoke, tmp_path: Path) -> None:
    config = _user_config()
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(USER_CONFIG, encoding="utf-8")
    folder = tmp_path / "My Notes"
    write_files(folder, {"a.md": "# A\n\nAlpha.\n"})

    added = kb_mcp("collections", "add", str(folder))
    assert added.exit_code == 0, added.output
    assert added.stdout.startswith("added collection my-notes: ")  # named after the folder
    text = config.read_text(encoding="utf-8")
    assert text.startswith(USER_CONFIG)
    assert 'name = "my-notes"' in text and f'path = "{folder.resolve()}"' in text

    twice = kb_mcp("collections", "add", str(folder), "--name", "other")
    assert twice.exit_code == 2
    assert "is already the collection 'my-notes'" in twice.stderr

    removed = kb_mcp("collections", "remove", "my-notes")
    assert removed.exit_code == 0, removed.output
    assert config.read_text(encoding="utf-8") == USER_CONFIG
    assert (folder / "a.md").is_file()

    unknown = kb_mcp("collections", "remove", "my-notes")
    assert unknown.exit_code == 2
    assert unknown.stderr.strip().endswith("the collections there: none")
