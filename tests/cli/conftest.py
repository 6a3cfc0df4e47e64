"""CliRunner fixtures: run ``kb-mcp`` in this process, offline, from an empty folder."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from kbmcp_cli.main import cli

Invoke = Callable[..., Result]

#: Loggers the commands configure (setup_logging, serve); restored after each test.
_LOGGERS = ("", "alembic", "httpx", "lancedb", "fastembed", "watchfiles",
            "kbmcp_adapters.mcp_server")


@pytest.fixture(autouse=True)
def _restore_logging() -> Iterator[None]:
    """The commands point the root logger at their stderr; give pytest its handlers back."""
    loggers = [logging.getLogger(name) for name in _LOGGERS]
    saved = [(lg, lg.level, lg.handlers[:]) for lg in loggers]
    yield
    for lg, level, handlers in saved:
        lg.setLevel(level)
        lg.handlers[:] = handlers


@pytest.fixture
def kb_mcp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
           kb_env: dict[str, str]) -> Invoke:
    """``kb_mcp("status", "--kb-path", ...)``: the command line in this process, run from
    an empty folder (no ./kb-mcp.toml to discover), offline, with the session's model cache."""
    work = tmp_path / "cwd"
    work.mkdir()
    monkeypatch.chdir(work)
    env = {k: kb_env[k] for k in ("HF_HUB_OFFLINE", "XDG_CACHE_HOME")}

    def invoke(*args: str) -> Result:
        return CliRunner().invoke(cli, list(args), env=env, prog_name="kb-mcp")

    return invoke


@pytest.fixture
def kb(tmp_path: Path) -> Path:
    """A knowledge base with one Markdown file and no index."""
    root = tmp_path / "kb"
    root.mkdir()
    (root / "a.md").write_text("# Alpha\n\nThe alpha notes talk about key rotation.\n",
                               encoding="utf-8")
    return root


#: Three small documents whose answers the eval tests' golden files point at.
EVAL_DOCS = {
    "keys.md": "# Keys\n\n## Rotation\n\nSigning keys follow a rotation schedule of 90 days.\n",
    "deploys.md": "# Deploys\n\n## Rollbacks\n\nTo revert a broken deploy, redeploy the previous "
                  "tag and confirm the health checks.\n",
    "oncall.md": "# On-call\n\nThe pager duty handover happens every Monday at ten.\n",
}


def indexed_eval_kb(tmp_path: Path, index: Callable[[Path], int], golden: str
                    ) -> tuple[Path, Path]:
    """``EVAL_DOCS`` indexed (``index`` returns how many were added) and ``golden`` written
    next to (outside) the knowledge base: (root, golden file)."""
    root = tmp_path / "kb"
    root.mkdir()
    for name, text in EVAL_DOCS.items():
        (root / name).write_text(text, encoding="utf-8")
    assert index(root) == len(EVAL_DOCS)
    path = tmp_path / "golden.yml"
    path.write_text(golden, encoding="utf-8")
    return root, path
