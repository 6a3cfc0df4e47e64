"""The parser worker processes under the real server (decision 0022): reads of converted
documents run in them from the server's event loop, a file over budget is refused with its
reason while the next read works, and nothing of them is left once the server has ended."""

from __future__ import annotations

import time
from pathlib import Path

from tests.e2e.conftest import Env, error_of, run_index, stdio_session, text_of
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


def test_code_and_extensionless_text_are_served_through_mcp(tmp_path: Path, server_env: Env
                                                            ) -> None:
    """Issue 39: a source file indexed in the parser workers is found by a symbol at its
    definition and served as the file itself; a README is read as text; a Makefile is
    refused as unsupported, without a format to enable."""
    kb = tmp_path / "kb"
    (kb / "tools").mkdir(parents=True)
    source = ("import sys\n\n\nclass Ledger:\n    \"\"\"Keeps the accounts.\"\"\"\n\n"
              "    def reconcile_accounts(self, rows):\n"
              "        \"\"\"Match every payment to its invoice.\"\"\"\n"
              "        return sorted(rows)\n")
    (kb / "tools" / "ledger.py").write_text(source, encoding="utf-8")
    (kb / "README").write_text("The ledger tools reconcile the shop's accounts.\n",
                               encoding="utf-8")
    (kb / "Makefile").write_text("all:\n\tpython tools/ledger.py\n", encoding="utf-8")
    (kb / "kb-mcp.toml").write_text('[parsers]\nenabled = ["md", "txt", "code"]\n',
                                    encoding="utf-8")
    run_index(kb, server_env)

    async def body() -> None:
        async with stdio_session(kb, tmp_path / "err.log", server_env) as client:
            found = text_of(await client.call_tool(
                "search", {"query": "reconcile_accounts", "limit": 3}))["results"]
            assert (found[0]["path"], found[0]["heading_path"]) == (
                "tools/ledger.py", ["ledger", "Ledger", "reconcile_accounts"])
            doc = text_of(await client.call_tool("get_document", {"path": "tools/ledger.py"}))
            assert doc["content"] == source
            lines = source.split("\n")[found[0]["start_line"] - 1 : found[0]["end_line"]]
            assert lines[0] == "    def reconcile_accounts(self, rows):"
            readme = text_of(await client.call_tool("get_document", {"path": "README"}))
            assert "reconcile the shop's accounts" in readme["content"]
            refused = error_of(await client.call_tool("get_document", {"path": "Makefile"}))
            assert refused["code"] == "path_refused"
            # one refusal for any name not served (issue 37 item 6): nothing to enable
            assert refused["message"] == "'Makefile' refused: no such document"

    run(body)


def test_a_scanned_page_is_read_by_ocr_in_the_workers_and_served_by_page(
    tmp_path: Path, server_env: Env
) -> None:
    """Issue 39: an image-only PDF page is recognised in the parser workers, found by a
    phrase of it through MCP, cited by its page and lines, and read back by page."""
    from tests.scans import scan_png, scanned_pdf

    kb = tmp_path / "kb"
    kb.mkdir()
    lines = ["The lighthouse keeper records", "every passing ship at dawn."]
    (kb / "log.pdf").write_bytes(scanned_pdf(["Harbour dues are paid monthly.",
                                              scan_png(lines)]))
    (kb / "kb-mcp.toml").write_text('[parsers]\nenabled = ["md", "pdf", "ocr"]\n',
                                    encoding="utf-8")
    run_index(kb, server_env)

    async def body() -> None:
        async with stdio_session(kb, tmp_path / "err.log", server_env) as client:
            found = text_of(await client.call_tool(
                "search", {"query": "lighthouse keeper passing ship", "limit": 3}))["results"]
            assert (found[0]["path"], found[0]["page"]) == ("log.pdf", 2)
            page = text_of(await client.call_tool("get_document",
                                                  {"path": "log.pdf", "page": 2}))
            assert page["content"].split("\n")[:2] == lines
            whole = text_of(await client.call_tool("get_document", {"path": "log.pdf"}))
            cited = whole["content"].split("\n")[found[0]["start_line"] - 1:found[0]["end_line"]]
            assert cited == lines

    run(body)
