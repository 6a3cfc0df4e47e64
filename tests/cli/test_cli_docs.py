"""docs/usage.md against ``--help``: every option of every command is documented under that
command, and every option the page documents still exists."""

from __future__ import annotations

import re
from pathlib import Path

import click
import pytest

from kbmcp_cli.main import cli

USAGE = Path(__file__).resolve().parents[2] / "docs" / "usage.md"
_CODE = re.compile(r"`([^`]+)`")
_OPTION = re.compile(r"(?<![\w/-])(--?[a-zA-Z][a-zA-Z0-9-]*)")


def documented(text: str) -> set[str]:
    """Options named inside `code spans`."""
    return {o for span in _CODE.findall(text) for o in _OPTION.findall(span)}


def sections(page: str) -> tuple[str, dict[str, str]]:
    """The text before the first command, and each ``## `kb-mcp NAME ...``` section."""
    parts = re.split(r"^## `kb-mcp ([\w-]+)[^`]*`\s*$", page, flags=re.M)
    return parts[0], dict(zip(parts[1::2], parts[2::2], strict=True))


def options(command: click.Command) -> set[str]:
    """Every spelling ``--help`` lists for the command's options, ``--help`` itself aside."""
    ctx = click.Context(command, info_name=command.name)
    found = {o for p in command.get_params(ctx) if isinstance(p, click.Option)
             for o in (*p.opts, *p.secondary_opts)}
    if isinstance(command, click.Group):  # its subcommands are documented in its section
        found |= {o for sub in command.commands.values() for o in options(sub)}
    return found - {"--help", "-h"}


def test_the_usage_page_has_a_section_per_command() -> None:
    _, by_command = sections(USAGE.read_text(encoding="utf-8"))
    assert sorted(by_command) == sorted(cli.commands)


@pytest.mark.parametrize("name", sorted(cli.commands))
def test_every_option_in_help_is_documented(name: str) -> None:
    intro, by_command = sections(USAGE.read_text(encoding="utf-8"))
    missing = options(cli.commands[name]) - documented(intro + by_command.get(name, ""))
    assert missing == set(), f"docs/usage.md lacks these `kb-mcp {name}` options"


@pytest.mark.parametrize("name", sorted(cli.commands))
def test_every_documented_option_still_exists(name: str) -> None:
    _, by_command = sections(USAGE.read_text(encoding="utf-8"))
    gone = documented(by_command.get(name, "")) - options(cli.commands[name])
    assert gone == set(), f"docs/usage.md documents options `kb-mcp {name}` no longer has"


def test_the_options_every_command_shares_are_documented_once_at_the_top() -> None:
    """Every command that opens a knowledge base (all but ``trust``, which handles config
    files themselves, and ``docs``, which prints the manual) takes the same three options."""
    intro, _ = sections(USAGE.read_text(encoding="utf-8"))
    opening = [c for name, c in cli.commands.items() if name not in ("trust", "docs")]
    shared = set.intersection(*(options(c) for c in opening))
    assert documented(intro) - {"--help"} == shared == {"--kb-path", "--config", "--verbose",
                                                         "-v"}


def test_the_check_catches_a_missing_and_a_stale_option() -> None:
    page = "intro `--kb-path`\n## `kb-mcp status`\n\n`--format json`, `--colour`\n"
    _, by_command = sections(page)
    assert documented(by_command["status"]) - options(cli.commands["status"]) == {"--colour"}
    assert options(cli.commands["status"]) - documented(page) == {"--config", "--verbose",
                                                                  "-v", "--skipped",
                                                                  "--collection"}
