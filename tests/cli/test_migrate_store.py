"""``kb-mcp migrate-store`` from the command line: a copy the printed config can use, and
refusals as one line with exit 2."""

from __future__ import annotations

import json
import re
from pathlib import Path

from tests.cli.conftest import Invoke
from tests.conftest import write_files

NOTES: dict[str, str | bytes] = {
    "ops/rotation.md": "# Rotating keys\n\nRotate the signing keys every ninety days.\n",
    "garden/tomatoes.md": "# Tomatoes\n\nTomato seedlings want warmth and light.\n",
    "cooking/bread.md": "# Sourdough\n\nFeed the starter the night before baking.\n",
}


def indexed(kb_mcp: Invoke, root: Path) -> Path:
    write_files(root, NOTES)
    result = kb_mcp("index", "--kb-path", str(root), "--quiet")
    assert result.exit_code == 0, result.output
    return root


def hits(kb_mcp: Invoke, *args: str) -> list[str]:
    result = kb_mcp("search", *args, "--format", "json", "how often are keys rotated")
    assert result.exit_code == 0, result.output
    return [h["path"] for h in json.loads(result.stdout)["results"]]


def test_the_printed_config_opens_a_healthy_copy(kb_mcp: Invoke, tmp_path: Path) -> None:
    root = indexed(kb_mcp, tmp_path / "kb")
    team_db, team_vectors = tmp_path / "team" / "kb.db", tmp_path / "team" / "vectors"
    result = kb_mcp("migrate-store", "--kb-path", str(root), "--to", f"sqlite:///{team_db}",
                    "--vectors-to", str(team_vectors))
    assert result.exit_code == 0, result.output
    assert "copied 3 documents" in result.stdout and "nothing was re-embedded" in result.stdout
    assert "copied 3/3 documents" in result.stderr  # progress goes to stderr
    assert "kb-mcp doctor" in result.stdout
    printed = [line for line in result.stdout.splitlines()
               if re.match(r"^(database_url|vectors_uri|\[embedding\]|model) ?", line)]
    config = tmp_path / "team.toml"
    config.write_text(f'kb_path = "{root}"\n' + "\n".join(printed) + "\n", encoding="utf-8")
    assert f'database_url = "sqlite:///{team_db}"' in printed
    assert f'vectors_uri = "{team_vectors}"' in printed
    doctor = kb_mcp("doctor", "--config", str(config))
    assert doctor.exit_code == 0, doctor.output
    assert "healthy" in doctor.stdout
    assert hits(kb_mcp, "--config", str(config)) == hits(kb_mcp, "--kb-path", str(root))


def test_a_second_copy_is_refused_then_replaces_with_the_flag(
    kb_mcp: Invoke, tmp_path: Path
) -> None:
    root = indexed(kb_mcp, tmp_path / "kb")
    to = ("--to", f"sqlite:///{tmp_path / 'team.db'}", "--vectors-to", str(tmp_path / "tv"))
    assert kb_mcp("migrate-store", "--kb-path", str(root), *to).exit_code == 0
    again = kb_mcp("migrate-store", "--kb-path", str(root), *to[:2], "--vectors-to",
                   str(tmp_path / "tv2"))
    assert again.exit_code == 2
    error = again.stderr.strip().splitlines()[-1]
    assert error.startswith("kb-mcp: error: ") and again.stderr.count("kb-mcp: error") == 1
    assert "already holds 3 documents" in error and "--replace" in error
    assert "Traceback" not in again.output
    replaced = kb_mcp("migrate-store", "--kb-path", str(root), *to, "--replace")
    assert replaced.exit_code == 0, replaced.output


def test_refusals_exit_2_with_one_sentence(kb_mcp: Invoke, tmp_path: Path) -> None:
    root = indexed(kb_mcp, tmp_path / "kb")
    target = f"sqlite:///{tmp_path / 'team.db'}"
    config = tmp_path / "other-model.toml"
    config.write_text(f'kb_path = "{root}"\n[embedding]\nmodel = "BAAI/bge-small-en-v1.5"\n',
                      encoding="utf-8")
    mismatch = kb_mcp("migrate-store", "--config", str(config), "--to", target)
    assert mismatch.exit_code == 2
    assert "kb-mcp: error:" in mismatch.stderr and "all-MiniLM" in mismatch.stderr
    empty = tmp_path / "empty"
    empty.mkdir()
    none = kb_mcp("migrate-store", "--kb-path", str(empty), "--to", target)
    assert none.exit_code == 2 and "kb-mcp index" in none.stderr
    assert not (tmp_path / "team.db").exists()
    bad = kb_mcp("migrate-store", "--kb-path", str(root), "--to", "mysql://u@h/db")
    assert bad.exit_code == 2 and "database_url" in bad.stderr


def test_the_password_of_the_target_is_never_shown(kb_mcp: Invoke, tmp_path: Path) -> None:
    root = indexed(kb_mcp, tmp_path / "kb")
    # a PostgreSQL URL nobody listens on: the copy fails, and says so without the password
    result = kb_mcp("migrate-store", "--kb-path", str(root), "--to",
                    "postgresql+psycopg://kb:hunter2secret@127.0.0.1:9/team")
    assert result.exit_code in (1, 2)
    assert "Traceback" not in result.output
    assert "hunter2secret" not in result.output


def test_a_copy_to_postgresql_is_healthy_with_the_printed_config(
    kb_mcp: Invoke, tmp_path: Path, pg_url: str
) -> None:
    root = indexed(kb_mcp, tmp_path / "kb")
    result = kb_mcp("migrate-store", "--kb-path", str(root), "--to", pg_url,
                    "--vectors-to", str(tmp_path / "team-vectors"))
    assert result.exit_code == 0, result.output
    assert f'database_url = "{pg_url}"' in result.stdout
    printed = result.stdout.split("kb-mcp.toml:\n", 1)[1].split("\nThen", 1)[0]
    config = tmp_path / "team.toml"
    config.write_text(f'kb_path = "{root}"\n{printed}', encoding="utf-8")
    doctor = kb_mcp("doctor", "--config", str(config))
    assert doctor.exit_code == 0, doctor.output
    assert hits(kb_mcp, "--config", str(config)) == hits(kb_mcp, "--kb-path", str(root))
    # the same command again finds the copy done and refuses to copy over it
    again = kb_mcp("migrate-store", "--kb-path", str(root), "--to", pg_url)
    assert again.exit_code == 2 and "already holds 3 documents" in again.stderr
