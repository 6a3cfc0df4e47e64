"""`kb-mcp search` marks its matches so they cannot be mistaken for the text: ⟦ ⟧ without
colour (a wiki link's ``[[on-call]]`` stays what it is), bold with colour; ``--color``,
``--no-color`` and ``NO_COLOR`` decide, and the fast route before click agrees."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from kbmcp_cli import search_fast
from kbmcp_cli.main import cli
from tests.integration.test_search_shaping import make_kb

WIKI = ("# Paging\n\nWhen the pager fires, follow [[on-call]] and page the "
        "[[incident-lead]] within ten minutes.\n")
BOLD_ON, BOLD_OFF = "\x1b[1m", "\x1b[0m"


def kb_root(tmp_path: Path) -> str:
    kb = make_kb(tmp_path, extra={"paging.md": WIKI})
    root = kb.settings.kb_path
    kb.close()
    return str(root)


def run(root: str, *args: str, env: dict[str, str | None] | None = None) -> str:
    result = CliRunner().invoke(
        cli, ["search", "pager incident", "--kb-path", root, "--mode", "lexical",
              "--no-server", *args], env={"NO_COLOR": None, **(env or {})})
    assert result.exit_code == 0, result.output
    return result.output


def test_without_a_terminal_matches_are_marked_apart_from_wiki_links(tmp_path: Path) -> None:
    out = run(kb_root(tmp_path))
    # the document's own [[...]] is shown as written; only the matches are marked
    assert "⟦pager⟧ fires, follow [[on-call]] and page the [[⟦incident⟧-lead]]" in out
    assert "\x1b" not in out


def test_color_and_no_color_and_the_no_color_variable(tmp_path: Path) -> None:
    root = kb_root(tmp_path)
    colored = run(root, "--color")
    assert f"{BOLD_ON}pager{BOLD_OFF} fires, follow [[on-call]]" in colored
    assert "⟦" not in colored
    assert "⟦pager⟧" in run(root, "--no-color")
    assert "⟦pager⟧" in run(root, env={"NO_COLOR": "1"})
    # the flag is the user's latest word: it wins over the environment
    assert f"{BOLD_ON}pager{BOLD_OFF}" in run(root, "--color", env={"NO_COLOR": "1"})


def test_the_fast_route_reads_the_same_flags_and_renders_the_same_marks() -> None:
    got = search_fast.parse(["pager", "--color", "--kb-path", "kb"])
    assert got is not None and got["color"] is True
    got = search_fast.parse(["pager", "--no-color"])
    assert got is not None and got["color"] is False
    assert "color" not in search_fast.search_params(got)  # never sent to the search
    hit = {"path": "paging.md", "start_line": 3, "end_line": 3, "heading_path": ["Paging"],
           "title": "Paging", "score": 0.5, "content": "follow [[on-call]] when paged",
           "matches": [[24, 29]]}
    response = {"results": [hit], "low_confidence": False}
    assert "[[on-call]] when ⟦paged⟧" in search_fast.render(response, "text", False)
    assert f"when {BOLD_ON}paged{BOLD_OFF}" in search_fast.render(response, "text", True)
