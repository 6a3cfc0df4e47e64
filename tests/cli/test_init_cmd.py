"""``kb-mcp init``: the kb-mcp.toml it writes loads through the real config loader (found in
the knowledge base, untrusted), an existing one is kept byte for byte, the index is built,
and the client lines name absolute paths (the end-to-end walk: tests/e2e/test_init_walk.py).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import sys
from pathlib import Path

import pytest

from kbmcp_adapters.app.config import build_settings
from kbmcp_cli.init_cmd import config_text, server_command
from kbmcp_core.settings import Settings
from tests.cli.conftest import Invoke

#: A commented ``# key = value`` line of the template (not the prose around it).
_KEY_LINE = re.compile(r"^# (\w+ = .*?)(?:\s+# .*)?$")


def claude_line(output: str) -> list[str]:
    """The printed ``claude mcp add NAME -- COMMAND...`` line, split as a shell would."""
    lines = [line.strip() for line in output.splitlines()
             if line.strip().startswith("claude mcp add ")]
    assert len(lines) == 1, output
    return shlex.split(lines[0])


def json_block(output: str) -> dict[str, object]:
    start = output.index('{\n  "mcpServers"')
    return dict(json.loads(output[start:output.index("\n}\n", start) + 2]))


def test_init_writes_a_config_that_loads_untrusted_indexes_and_prints_absolute_lines(
        kb_mcp: Invoke, kb: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(kb.parent)
    result = kb_mcp("init", "--kb-path", "kb")  # relative, as a user types it
    assert result.exit_code == 0, result.output
    written = kb / "kb-mcp.toml"
    assert f"wrote {written}" in result.stderr
    assert "1 added" in result.stdout  # the index command's own summary
    assert (kb / ".kb-mcp" / "index.db").is_file()

    # the real loader, as `kb-mcp serve --kb-path kb` will read it: found, not trusted,
    # and still accepted (it sets no key that needs trust)
    settings = build_settings(None, cwd=kb.parent, kb_path=kb)
    assert settings.config_origin.path == written
    assert settings.config_origin.implicit and not settings.config_origin.trusted
    assert settings.enabled_formats == ("md",)

    args = claude_line(result.stdout)
    assert args[:5] == ["claude", "mcp", "add", "kb", "--"]
    command = args[5:]
    serve_at = command.index("serve")
    assert command[serve_at:] == ["serve", "--kb-path", str(kb.resolve())]
    # under CliRunner the running program is pytest, not the console script: the lines
    # start this interpreter with -m kbmcp_cli, which is what starts this same kb-mcp
    assert command[:serve_at] == [os.path.abspath(sys.executable), "-m", "kbmcp_cli"]
    server = json_block(result.stdout)["mcpServers"]["kb"]  # type: ignore[index]
    assert [server["command"], *server["args"]] == command


def test_every_commented_key_is_one_the_loader_accepts_with_its_default(tmp_path: Path) -> None:
    """Uncommenting any line of the template gives a file the real loader takes, and each
    commented default is the loader's default, so the comments cannot lie."""
    text = config_text()
    uncommented = "\n".join(
        m[1] if (m := _KEY_LINE.match(line)) else line for line in text.splitlines())
    keys = [m[1].split(" =")[0] for line in text.splitlines() if (m := _KEY_LINE.match(line))]
    assert {"database_url", "index_dir", "workers", "exclude_dirs", "default_limit", "model",
            "debounce_ms"} <= set(keys)
    kb = tmp_path / "kb"
    kb.mkdir()
    path = kb / "all.toml"  # relative paths in a file are relative to its folder
    path.write_text(uncommented, encoding="utf-8")
    settings = build_settings(path, kb_path=kb)  # named, so trusted: database_url allowed
    defaults = Settings(kb_path=kb, index_dir=kb / ".kb-mcp")
    for field in ("exclude_dirs", "search_default_limit", "search_max_limit",
                  "search_chunks_per_document", "search_diversity", "search_context",
                  "search_rerank", "embedding_model", "embedding_batch_size", "watch",
                  "watch_debounce_ms", "chunk_min_tokens", "parsers_workers",
                  "enabled_formats"):
        assert getattr(settings, field) == getattr(defaults, field), field
    assert settings.index_dir == kb / ".kb-mcp"


def test_the_keys_that_need_trust_are_only_in_comments(tmp_path: Path) -> None:
    """As written, the file sets nothing a found file needs trust for; uncommented, the
    example that says where data goes is refused until trusted (what its comment says)."""
    kb = tmp_path / "kb"
    kb.mkdir()
    text = config_text()
    (kb / "kb-mcp.toml").write_text(text.replace("# database_url = ", "database_url = "),
                                    encoding="utf-8")
    from kbmcp_core.errors import ConfigError

    with pytest.raises(ConfigError, match="sets database_url .* is not trusted"):
        build_settings(None, kb_path=kb)
    assert "needs `kb-mcp trust`" in text


def test_init_keeps_an_existing_config_byte_for_byte(kb_mcp: Invoke, kb: Path) -> None:
    mine = b"# mine\n[search]\ndefault_limit = 7\n"
    (kb / "kb-mcp.toml").write_bytes(mine)
    result = kb_mcp("init", "--kb-path", str(kb))
    assert result.exit_code == 0, result.output
    assert (kb / "kb-mcp.toml").read_bytes() == mine
    assert "kept the existing" in result.stderr and "never replaces it" in result.stderr
    assert "1 added" in result.stdout and claude_line(result.stdout)
    again = kb_mcp("init", "--kb-path", str(kb))  # running it twice is harmless
    assert again.exit_code == 0 and (kb / "kb-mcp.toml").read_bytes() == mine
    assert "0 added" in again.stdout


def test_after_init_the_folder_s_own_commands_need_no_kb_path(
        kb_mcp: Invoke, kb: Path, tmp_path: Path, user_config_home: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    notes = tmp_path / "notes"  # the user's usual knowledge base, named in their config
    notes.mkdir()
    (notes / "n.md").write_text("# Notes\n\nGarden notes about tomatoes.\n", encoding="utf-8")
    mine = user_config_home / "kb-mcp" / "config.toml"
    mine.parent.mkdir()
    mine.write_text(f'kb_path = "{notes}"\n', encoding="utf-8")
    monkeypatch.chdir(kb)
    assert kb_mcp("init").exit_code == 0  # this folder, as a user sets one up

    found = kb_mcp("search", "key rotation", "--format", "json")
    assert found.exit_code == 0, found.output
    assert [hit["path"] for hit in json.loads(found.stdout)["results"]] == ["a.md"]
    status = kb_mcp("status")
    assert status.exit_code == 0, status.output
    assert f"store: {kb / '.kb-mcp' / 'index.db'}\n" in status.stdout  # not the notes'
    assert (f"config: {kb / 'kb-mcp.toml'} (found in the working folder; written by kb-mcp "
            "init, formats only: needs no trust") in status.stdout
    verbose = kb_mcp("search", "key rotation", "-v")  # -v's line says the same
    assert "written by kb-mcp init, formats only: needs no trust" in verbose.stderr

    # a file nobody's init wrote still has to name its knowledge base (decision 0047)
    stray = tmp_path / "stray"
    stray.mkdir()
    (stray / "kb-mcp.toml").write_text('[parsers]\nenabled = ["md"]\n', encoding="utf-8")
    monkeypatch.chdir(stray)
    refused = kb_mcp("status")
    assert refused.exit_code == 2 and "no knowledge base given" in refused.stderr


def test_init_says_the_file_it_writes_is_laid_over_a_user_config(
        kb_mcp: Invoke, kb: Path, user_config_home: Path) -> None:
    mine = user_config_home / "kb-mcp" / "config.toml"
    mine.parent.mkdir()
    mine.write_text("[search]\ndefault_limit = 3\n", encoding="utf-8")
    result = kb_mcp("init", "--kb-path", str(kb))
    assert result.exit_code == 0, result.output
    assert f"it is laid over your user config {mine}" in result.stderr
    settings = build_settings(None, cwd=kb, kb_path=kb)  # both: the new one over the user's
    assert settings.config_origin.path == kb / "kb-mcp.toml"
    assert settings.config_origin.over == mine
    assert settings.search_default_limit == 3  # the written file does not name it


def test_init_with_a_named_config_passes_it_on_to_the_client_lines(
        kb_mcp: Invoke, kb: Path, tmp_path: Path) -> None:
    named = tmp_path / "team.toml"
    named.write_text("[search]\ndefault_limit = 4\n", encoding="utf-8")
    result = kb_mcp("init", "--kb-path", str(kb), "--config", str(named), "--name", "notes")
    assert result.exit_code == 0, result.output
    args = claude_line(result.stdout)
    assert args[3] == "notes" and args[-2:] == ["--config", str(named)]


def test_init_on_a_missing_folder_is_a_usage_error(kb_mcp: Invoke, tmp_path: Path) -> None:
    result = kb_mcp("init", "--kb-path", str(tmp_path / "nowhere"))
    assert result.exit_code == 2
    assert "kb_path is not a directory" in result.stderr
    assert not (tmp_path / "nowhere").exists()


def test_a_bad_config_stops_init_before_it_writes_anything(kb_mcp: Invoke,
                                                           tmp_path: Path) -> None:
    kb = tmp_path / "kb"
    kb.mkdir()
    config = tmp_path / "mine.toml"
    config.write_text("[search]\ndefault_limt = 3\n", encoding="utf-8")
    result = kb_mcp("init", "--kb-path", str(kb), "--config", str(config))
    assert result.exit_code == 2 and "unknown key 'search.default_limt'" in result.stderr
    assert list(kb.iterdir()) == []  # no kb-mcp.toml, no index


def test_the_server_command_is_the_running_kb_mcp_by_its_absolute_path(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    script = tmp_path / "bin" / "kb-mcp"
    script.parent.mkdir()
    script.write_text("#!/bin/sh\n")
    script.chmod(0o755)
    python = str(tmp_path / "venv" / "bin" / "python")
    assert server_command(str(script), python) == [str(script)]
    monkeypatch.chdir(tmp_path)
    assert server_command("bin/kb-mcp", python) == [str(script)]  # made absolute
    monkeypatch.setenv("PATH", str(script.parent))
    assert server_command("kb-mcp", python) == [str(script)]  # found as the shell did
    # `python -m kbmcp_cli`: argv[0] is the module's file; this interpreter starts it
    assert server_command("/x/kbmcp_cli/__main__.py", python) == [python, "-m", "kbmcp_cli"]


def test_init_enables_the_formats_it_finds_in_the_folder(kb_mcp: Invoke, tmp_path: Path) -> None:
    kb = tmp_path / "docs"
    files = {
        "guide.md": "# Guide\n\nThe kettle descales with citric acid.\n",
        "api/index.html": "<html><body><main><h1>API</h1><p>The kettle endpoint boils "
                          "water.</p></main></body></html>",
        "howto/setup.rst": "Setup\n=====\n\nThe kettle needs a socket.\n",
        "NEWS.txt": "Version 2 of the kettle whistles.\n",
        ".git/ignored.html": "<p>never counted: a dot folder</p>",
        "build/out.pdf": "never counted: an excluded folder name",
    }
    for rel, text in files.items():
        (kb / rel).parent.mkdir(parents=True, exist_ok=True)
        (kb / rel).write_text(text, encoding="utf-8")
    result = kb_mcp("init", "--kb-path", str(kb))
    assert result.exit_code == 0, result.output
    assert "formats found and enabled: md (1), txt (1), html (1), rst (1)" in result.stderr
    assert "4 added" in result.stdout and "format not enabled" not in result.stdout
    settings = build_settings(None, cwd=tmp_path, kb_path=kb)
    assert settings.enabled_formats == ("md", "txt", "html", "rst")


def test_an_empty_folder_gets_markdown_enabled(kb_mcp: Invoke, tmp_path: Path) -> None:
    kb = tmp_path / "empty"
    kb.mkdir()
    result = kb_mcp("init", "--kb-path", str(kb))
    assert result.exit_code == 0, result.output
    assert "formats found and enabled: md (0)" in result.stderr
    assert build_settings(None, cwd=tmp_path, kb_path=kb).enabled_formats == ("md",)


def test_init_enables_code_and_extensionless_text_it_finds(kb_mcp: Invoke, tmp_path: Path
                                                           ) -> None:
    kb = tmp_path / "project"
    files = {
        "README": "The kettle project boils water on a schedule.\n",
        "NEWS": "Version 2 whistles.\n",
        "src/kettle.py": "def boil(litres):\n    return litres * 90\n",
        "src/timer.go": "package kettle\n\nfunc Wait() {}\n",
        "Makefile": "all:\n\tgo build\n",
    }
    for rel, text in files.items():
        (kb / rel).parent.mkdir(parents=True, exist_ok=True)
        (kb / rel).write_text(text, encoding="utf-8")
    result = kb_mcp("init", "--kb-path", str(kb))
    assert result.exit_code == 0, result.output
    assert "formats found and enabled: md (0), txt (2), code (2)" in result.stderr
    assert "4 added" in result.stdout
    assert build_settings(None, cwd=tmp_path, kb_path=kb).enabled_formats == (
        "md", "txt", "code")
    named = kb_mcp("index", "--kb-path", str(kb), "-v")  # -v names every skipped file
    assert named.exit_code == 0, named.output
    assert "skipped (not a supported format): Makefile" in named.output


def test_init_enables_ocr_when_it_finds_scans_and_images(kb_mcp: Invoke, tmp_path: Path
                                                         ) -> None:
    from tests.scans import scan_png, scanned_pdf

    kb = tmp_path / "office"
    kb.mkdir()
    (kb / "typed.pdf").write_bytes(scanned_pdf(["Minutes of the harbour board meeting."]))
    (kb / "fax.pdf").write_bytes(scanned_pdf([scan_png(["Invoice for the harbour crane"])]))
    (kb / "whiteboard.png").write_bytes(scan_png(["Sprint goals: tide tables"]))
    result = kb_mcp("init", "--kb-path", str(kb))
    assert result.exit_code == 0, result.output
    # two PDFs, one a scan; the scan and the image are what OCR reads
    assert "formats found and enabled: md (0), pdf (2), ocr (2)" in result.stderr
    assert "3 added" in result.stdout
    assert build_settings(None, cwd=tmp_path, kb_path=kb).enabled_formats == ("md", "pdf", "ocr")
