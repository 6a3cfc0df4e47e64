"""The parser worker processes under the real server (decision 0022): reads of converted
documents run in them from the server's event loop, a file over budget is refused with its
reason while the next read works, and nothing of them is left once the server has ended."""

from __future__ import annotations

import time
from pathlib import Path

from tests.e2e.conftest import Env, error_of, stdio_session, text_of
from tests.e2e.test_mcp_stdio import run
from tests.integration.amplifiers import shared_strings_workbook, slideshow_as_pptx


def processes_marked(marker: str) -> list[int]:
    """Processes of this user whose environment holds ``marker`` (the server and every
    process it started)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            environ = (entry / "environ").read_bytes()
        except OSError:
            continue
        if marker.encode() in environ.split(b"\0"):
            found.append(int(entry.name))
    return found


def test_reads_through_the_server_use_workers_that_end_with_it(
    tmp_path: Path, server_env: Env
) -> None:
    kb = tmp_path / "kb"
    kb.mkdir()
    (kb / "plan.pptx").write_bytes(slideshow_as_pptx())
    (kb / "shared.xlsx").write_bytes(shared_strings_workbook())
    (kb / "note.md").write_text("# Note\n\nCompost the leaves.\n", encoding="utf-8")
    config = kb / "kb-mcp.toml"
    config.write_text('[parsers]\nenabled = ["md", "pptx", "xlsx"]\n', encoding="utf-8")
    marker = f"KB_MCP_TEST_MARK={tmp_path.name}"
    env = {**server_env, marker.split("=")[0]: marker.split("=")[1]}
    seen: list[int] = []

    async def body() -> None:
        async with stdio_session(
            kb, tmp_path / "err.log", env, extra_args=("--config", str(config))
        ) as client:
            error = error_of(await client.call_tool("get_document", {"path": "shared.xlsx"}))
            assert error["code"] == "path_refused"
            assert (
                "produces more than 10,000,000 characters of text; limit [parsers].max_output_chars"
            ) in error["message"]
            doc = text_of(await client.call_tool("get_document", {"path": "plan.pptx"}))
            assert "# Slide 1: Irrigation plan" in doc["content"]
            seen.extend(processes_marked(marker))
            assert len(seen) >= 2  # the server and its worker

    run(body)
    deadline = time.monotonic() + 30
    while processes_marked(marker):
        assert time.monotonic() < deadline, f"left running: {processes_marked(marker)}"
        time.sleep(0.1)
    assert "Traceback" not in (tmp_path / "err.log").read_text(encoding="utf-8")
