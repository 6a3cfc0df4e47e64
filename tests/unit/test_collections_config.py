"""``[[collections]]``: how the config is read, what each collection's settings are, and
how a call's ``collection`` argument is resolved (decision 0041)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kbmcp_adapters.app.collections import collection_settings, open_collections
from kbmcp_adapters.app.config import build_settings
from kbmcp_core.collections import folder_name
from kbmcp_core.errors import ConfigError, InvalidQuery, UnknownCollection

THREE = """
[[collections]]
name = "handbook"
path = "team-handbook"
description = "The team handbook"

[[collections]]
name = "notes"
path = "{notes}"

[[collections]]
name = "archive"
path = "old"
default = false
[collections.parsers]
enabled = ["md", "txt"]
exclude_dirs = ["drafts"]
"""


def config(tmp_path: Path, text: str, *, folders: tuple[str, ...] = (
        "team-handbook", "notes", "old")) -> Path:
    for name in folders:
        (tmp_path / name).mkdir(exist_ok=True)
    path = tmp_path / "server" / "kb-mcp.toml"
    path.parent.mkdir(exist_ok=True)
    path.write_text(text.format(notes=tmp_path / "notes").replace(
        'path = "team-handbook"', 'path = "../team-handbook"').replace(
        'path = "old"', 'path = "../old"'), encoding="utf-8")
    return path


def test_three_collections_are_read_in_order_with_their_overrides(tmp_path: Path) -> None:
    s = build_settings(config(tmp_path, THREE), user_config=False, env={})
    assert [c.name for c in s.collections] == ["handbook", "notes", "archive"]
    handbook, notes, archive = s.collections
    assert handbook.path == (tmp_path / "team-handbook").resolve()  # relative to the file
    assert notes.path == (tmp_path / "notes").resolve()
    assert handbook.description == "The team handbook" and handbook.default
    assert not archive.default
    assert archive.enabled_formats == ("md", "txt") and archive.exclude_dirs == ("drafts",)
    assert handbook.enabled_formats is None and handbook.exclude_dirs is None
    # no kb_path: the index folder hangs off the config file's folder
    assert s.kb_path == (tmp_path / "server").resolve()
    assert s.index_dir == s.kb_path / ".kb-mcp"


def test_each_collection_gets_its_own_index_folder_and_the_shared_rest(
        tmp_path: Path) -> None:
    s = build_settings(config(tmp_path, THREE), user_config=False, env={},
                       search_default_limit=7)
    collections = open_collections(s)
    assert collections.names == ("handbook", "notes", "archive")
    assert collections.defaults == ("handbook", "notes")
    archive = collections.settings("archive")
    assert archive.kb_path == (tmp_path / "old").resolve()
    assert archive.index_dir == s.index_dir / "collections" / "archive"
    assert archive.enabled_formats == ("md", "txt") and archive.exclude_dirs == ("drafts",)
    assert archive.search_default_limit == 7 and archive.collections == ()
    notes = collections.settings("notes")
    assert notes.enabled_formats == s.enabled_formats and notes.exclude_dirs == s.exclude_dirs
    assert len({collections.settings(n).index_dir for n in collections.names}) == 3


def test_vectors_and_postgresql_are_split_per_collection(tmp_path: Path) -> None:
    s = build_settings(config(tmp_path, THREE), user_config=False, env={},
                       vectors_uri="s3://bucket/team?region=x",
                       database_url="postgresql+psycopg://kb@db.example.test/kb")
    handbook = collection_settings(s, s.collections[0])
    assert handbook.vectors_uri == "s3://bucket/team/handbook?region=x"
    assert "search_path" in (handbook.database_url or "")
    assert "kb_handbook" in (handbook.database_url or "")
    local = build_settings(config(tmp_path, THREE), user_config=False, env={},
                           vectors_uri=str(tmp_path / "vec"))
    assert collection_settings(local, local.collections[1]).vectors_uri == str(
        tmp_path / "vec" / "notes")


def test_a_sqlite_database_url_cannot_hold_several_collections(tmp_path: Path) -> None:
    s = build_settings(config(tmp_path, THREE), user_config=False, env={},
                       database_url=f"sqlite:///{tmp_path / 'one.db'}")
    with pytest.raises(ConfigError, match="SQLite database_url cannot hold several"):
        open_collections(s)


def test_one_folder_is_one_collection_named_after_it_with_the_same_settings(
        tmp_path: Path) -> None:
    kb = tmp_path / "My Team Notes!"
    kb.mkdir()
    s = build_settings(kb_path=kb, user_config=False, env={})
    collections = open_collections(s)
    assert collections.names == ("my-team-notes",) == collections.defaults
    assert collections.settings("my-team-notes") is s  # nothing moves on disk
    assert not collections.several


@pytest.mark.parametrize(("folder", "name"), [
    ("notes", "notes"), ("My Notes", "my-notes"), ("__x__", "x"), ("日本語", "kb"),
    ("a" * 80, "a" * 64), ("Team_Docs-2", "team_docs-2"),
])
def test_folder_names_become_valid_collection_names(folder: str, name: str) -> None:
    assert folder_name(Path("/x") / folder) == name


@pytest.mark.parametrize(("text", "message"), [
    ('[[collections]]\nname = "Bad Name"\npath = "."\n', "must match"),
    ('[[collections]]\nname = "a"\npath = "."\n[[collections]]\nname = "a"\npath = "."\n',
     "named twice"),
    ('[[collections]]\nname = "a"\n', "needs a name and a path"),
    ('[[collections]]\nname = "a"\npath = "."\ncolour = "red"\n', "unknown key 'colour'"),
    ('[[collections]]\nname = "a"\npath = "."\ndefault = "yes"\n', "default must be"),
    ('[[collections]]\nname = "a"\npath = "."\n[collections.parsers]\nmax_elements = 5\n',
     "unknown key 'parsers.max_elements'"),
    ('[[collections]]\nname = "a"\npath = "missing"\n', "path is not a directory"),
    ('collections = "a"\n', "one or more [[collections]] tables"),
])
def test_a_bad_collections_table_is_a_clear_config_error(
        tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "kb-mcp.toml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError, match=message.replace("[", r"\[").replace("]", r"\]")):
        build_settings(path, user_config=False, env={})


def test_resolve_never_widens_to_every_collection(tmp_path: Path) -> None:
    collections = open_collections(
        build_settings(config(tmp_path, THREE), user_config=False, env={}))
    assert collections.resolve(None) == ("handbook", "notes")  # not the archive
    assert collections.resolve([]) == ("handbook", "notes")
    assert collections.resolve("archive") == ("archive",)
    assert collections.resolve(["notes", "archive", "notes"]) == ("notes", "archive")
    with pytest.raises(UnknownCollection) as raised:
        collections.resolve(["notes", "secrets"])
    assert raised.value.code == "invalid_argument"
    assert str(raised.value) == ("unknown collection 'secrets'; the collections are: "
                                 "handbook, notes, archive")
    with pytest.raises(UnknownCollection):
        collections.kb("secrets")
    with pytest.raises(InvalidQuery):
        collections.resolve([3])  # type: ignore[list-item]


def test_with_no_default_collection_a_call_must_name_one(tmp_path: Path) -> None:
    path = tmp_path / "kb-mcp.toml"
    (tmp_path / "a").mkdir()
    path.write_text('[[collections]]\nname = "a"\npath = "a"\ndefault = false\n',
                    encoding="utf-8")
    collections = open_collections(build_settings(path, user_config=False, env={}))
    with pytest.raises(UnknownCollection, match="no collection is searched by default"):
        collections.resolve(None)
    assert collections.resolve("a") == ("a",)


def test_collections_with_one_model_share_one_embedder_and_one_reranker(
        tmp_path: Path) -> None:
    collections = open_collections(
        build_settings(config(tmp_path, THREE), user_config=False, env={}))
    containers = [collections.kb(n)._container for n in collections.names]
    assert len({id(c.embedder) for c in containers}) == 1
    assert len({id(c.reranker) for c in containers}) == 1
    assert collections.kb("notes") is collections.kb("notes")
