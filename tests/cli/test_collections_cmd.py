"""The command line over ``[[collections]]`` (decision 0041): ``index`` indexes each
collection (or those ``--collection`` names), ``search`` and ``get`` take
``--collection``, and ``kb-mcp collections`` lists them with their counts and freshness."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli.conftest import Invoke
from tests.conftest import write_files

CONFIG = """
[[collections]]
name = "handbook"
path = "handbook"
description = "The team handbook"

[[collections]]
name = "notes"
path = "notes"

[[collections]]
name = "archive"
path = "archive"
default = false
[collections.parsers]
enabled = ["md", "txt"]
"""


@pytest.fixture
def served(tmp_path: Path) -> Path:
    """Three folders and a config naming them; the config file is returned."""
    root = tmp_path / "server"
    write_files(root / "handbook", {
        "on-call.md": "# On-call\n\nThe on-call rota changes every Monday at ten.\n",
        "readme.md": "# Handbook readme\n\nThis handbook covers the rota and deploys.\n"})
    write_files(root / "notes", {
        "garden.md": "# Garden\n\nTomatoes need staking in June; the rota of watering.\n",
        "readme.md": "# Notes readme\n\nPrivate notes about the garden.\n"})
    write_files(root / "archive", {
        "old-rota.txt": "The old rota of 2019 changed on Fridays.\n"})
    config = root / "kb-mcp.toml"
    config.write_text(CONFIG, encoding="utf-8")
    return config


def test_index_indexes_every_collection_each_in_its_own_folder(
        kb_mcp: Invoke, served: Path) -> None:
    result = kb_mcp("index", "--config", str(served), "-q")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert [line.split(":")[0] for line in lines] == ["handbook", "notes", "archive"]
    assert "2 added" in lines[0] and "1 added" in lines[2]  # archive reads .txt
    base = served.parent / ".kb-mcp" / "collections"
    assert sorted(p.name for p in base.iterdir()) == ["archive", "handbook", "notes"]
    assert all((base / n / "index.db").is_file() for n in ("archive", "handbook", "notes"))
    again = kb_mcp("index", "--config", str(served), "--collection", "notes",
                   "--format", "json", "-q")
    assert again.exit_code == 0, again.output
    data = json.loads(again.stdout)
    assert [c["collection"] for c in data["collections"]] == ["notes"]
    assert data["collections"][0]["unchanged"] == 2


def test_an_unknown_collection_is_exit_2_naming_the_real_ones(
        kb_mcp: Invoke, served: Path) -> None:
    for command in (["index"], ["search", "rota"], ["get", "readme.md"]):
        result = kb_mcp(*command, "--config", str(served), "--collection", "handbok")
        assert result.exit_code == 2, (command, result.output)
        assert result.stderr.strip() == ("kb-mcp: error: unknown collection 'handbok'; the "
                                         "collections are: handbook, notes, archive")
        assert result.stdout == ""
    assert not (served.parent / ".kb-mcp").exists()  # nothing was indexed


def test_search_takes_collections_and_names_them_when_several(
        kb_mcp: Invoke, served: Path) -> None:
    assert kb_mcp("index", "--config", str(served), "-q").exit_code == 0
    one = kb_mcp("search", "rota", "--config", str(served), "--collection", "handbook",
                 "--format", "json")
    assert one.exit_code == 0, one.output
    hits = json.loads(one.stdout)["results"]
    assert hits and {h["collection"] for h in hits} == {"handbook"}
    assert {h["path"] for h in hits} <= {"on-call.md", "readme.md"}

    # default: handbook and notes, not the archive
    both = kb_mcp("search", "rota", "--config", str(served), "--format", "json", "-n", "10")
    found = {(h["collection"], h["path"]) for h in json.loads(both.stdout)["results"]}
    assert ("notes", "garden.md") in found and ("handbook", "on-call.md") in found
    assert all(c != "archive" for c, _ in found)
    assert {h["uri"] for h in json.loads(both.stdout)["results"]} >= {
        "kb://doc/notes/garden.md", "kb://doc/handbook/on-call.md"}

    text = kb_mcp("search", "rota", "--config", str(served), "--collection", "archive",
                  "--collection", "notes")
    assert text.exit_code == 0, text.output
    listed = [line for line in text.stdout.splitlines() if line[:1].isdigit()]
    assert listed and all(line.split(" ")[1].split(":")[0] in ("archive", "notes")
                          for line in listed)
    assert any("archive:old-rota.txt" in line for line in listed)
    single = kb_mcp("search", "rota", "--config", str(served), "--collection", "notes")
    assert "1. garden.md [" in single.stdout  # one collection: plain paths


def test_get_reads_the_document_of_the_named_collection(kb_mcp: Invoke, served: Path) -> None:
    assert kb_mcp("index", "--config", str(served), "-q").exit_code == 0
    hand = kb_mcp("get", "readme.md", "--config", str(served), "--collection", "handbook")
    assert hand.exit_code == 0, hand.output
    assert "This handbook covers" in hand.stdout
    notes = kb_mcp("get", "readme.md", "--config", str(served), "--collection", "notes")
    assert "Private notes" in notes.stdout and "handbook" not in notes.stdout
    unnamed = kb_mcp("get", "readme.md", "--config", str(served))
    assert unnamed.exit_code == 2
    assert "name the collection to read with --collection" in unnamed.stderr
    outside = kb_mcp("get", "../notes/readme.md", "--config", str(served),
                     "--collection", "handbook")
    assert outside.exit_code == 1 and "Private notes" not in outside.stdout  # refused
    assert outside.stderr.startswith("kb-mcp: error: ")


def test_collections_lists_names_counts_and_freshness(kb_mcp: Invoke, served: Path) -> None:
    before = kb_mcp("collections", "--config", str(served), "--format", "json")
    assert before.exit_code == 0, before.output
    listed = json.loads(before.stdout)["collections"]
    assert [c["name"] for c in listed] == ["handbook", "notes", "archive"]
    assert all(not c["ready"] and c["document_count"] == 0 and c["last_indexed"] is None
               for c in listed)
    assert listed[0]["description"] == "The team handbook"
    assert listed[1]["path"] == str((served.parent / "notes").resolve())
    assert not (served.parent / ".kb-mcp").exists()  # listing creates nothing

    assert kb_mcp("index", "--config", str(served), "--collection", "notes",
                  "-q").exit_code == 0
    after = json.loads(kb_mcp("collections", "--config", str(served), "--format",
                              "json").stdout)["collections"]
    notes = next(c for c in after if c["name"] == "notes")
    assert notes["ready"] and notes["document_count"] == 2 and notes["last_indexed"]
    assert not next(c for c in after if c["name"] == "handbook")["ready"]
    text = kb_mcp("collections", "--config", str(served))
    assert "handbook: The team handbook\n" in text.stdout
    assert "archive (searched only when named)\n" in text.stdout
    assert "documents: 2, last indexed: 20" in text.stdout
    assert "documents: 0, last indexed: never, not ready: run `kb-mcp index`" in text.stdout


def test_one_folder_is_one_collection_and_its_commands_are_unchanged(
        kb_mcp: Invoke, tmp_path: Path) -> None:
    kb = tmp_path / "My Notes"
    write_files(kb, {"a.md": "# Alpha\n\nThe alpha notes talk about key rotation.\n"})
    assert kb_mcp("index", "--kb-path", str(kb), "-q").stdout.startswith("scanned 1: 1 added")
    listed = json.loads(kb_mcp("collections", "--kb-path", str(kb), "--format",
                               "json").stdout)["collections"]
    assert [(c["name"], c["document_count"], c["ready"]) for c in listed] == [
        ("my-notes", 1, True)]
    plain = json.loads(kb_mcp("search", "rotation", "--kb-path", str(kb), "--no-server",
                              "--format", "json").stdout)
    assert "collection" not in plain["results"][0]  # today's answer, as it was
    assert (kb / ".kb-mcp" / "index.db").is_file()  # nothing moved
    named = json.loads(kb_mcp("search", "rotation", "--kb-path", str(kb), "--collection",
                              "my-notes", "--format", "json").stdout)
    assert named["results"][0]["collection"] == "my-notes"
    assert named["results"][0]["path"] == "a.md"
