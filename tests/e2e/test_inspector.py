"""An independent client: the MCP Inspector CLI (Node, pinned) against `kb-mcp serve`."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from kbmcp_core.answer_lines import lines_of
from tests.e2e.conftest import DEADLINE, Env, kb_mcp_command

INSPECTOR = "@modelcontextprotocol/inspector@2.12.0"
#: `.ci/run` installs the pinned Inspector here; elsewhere npx fetches the same version.
CI_INSTALL = Path(__file__).resolve().parents[2] / ".ci" / "node" / "node_modules" / ".bin"
#: The first npx run may download the package.
FIRST_RUN_DEADLINE = 600.0


def inspector_command() -> list[str]:
    local = CI_INSTALL / "mcp-inspector"
    if local.exists():
        return [str(local)]
    npx = shutil.which("npx")
    if npx is None:
        pytest.skip("npx is not on PATH: the MCP Inspector CLI needs Node.js and npm")
    return [npx, "-y", INSPECTOR]


Inspect = Callable[..., "subprocess.CompletedProcess[str]"]


@pytest.fixture(scope="module")
def inspect(indexed_kb: Path, server_env: Env) -> Inspect:
    """Run the Inspector CLI against `kb-mcp serve` on the indexed knowledge base."""
    command = inspector_command()
    version = subprocess.run(
        [*command, "--version"],
        capture_output=True,
        text=True,
        timeout=FIRST_RUN_DEADLINE,
        check=False,
    )
    assert version.returncode == 0, version.stderr[-2000:]
    assert version.stdout.strip() == INSPECTOR.rsplit("@", 1)[1]
    env_flags = [flag for key, value in server_env.items() for flag in ("-e", f"{key}={value}")]

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*command, "--cli", *env_flags, *kb_mcp_command(), "serve",
             "--kb-path", str(indexed_kb), "--no-watch", *args],
            capture_output=True,
            text=True,
            timeout=DEADLINE,
            check=False,
        )  # fmt: skip

    return run


def answer(done: subprocess.CompletedProcess[str]) -> Any:
    assert done.returncode == 0, (done.stdout[-2000:], done.stderr[-2000:])
    return json.loads(done.stdout)


def test_inspector_lists_portable_tools(inspect: Inspect) -> None:
    done = inspect("--method", "tools/list", "--strict")
    tools = {t["name"]: t for t in answer(done)["tools"]}
    assert set(tools) == {"search", "get_document", "get_documents", "list_topics",
                          "rebuild_index", "get_connection_graph", "index_status"}
    assert "Warning: tool" not in done.stderr  # --strict found no portability problem
    assert tools["search"]["annotations"]["readOnlyHint"] is True


@pytest.fixture(scope="module")
def searched(inspect: Inspect) -> Any:
    """One search through the Inspector, read by the two tests below (each call starts a
    server and loads the model: the same call twice would pay that twice)."""
    arguments = json.dumps({"query": "when are the database backups taken", "limit": 2})
    return answer(inspect("--method", "tools/call", "--tool-name", "search",
                          "--tool-args-json", arguments))


def test_inspector_calls_search(searched: Any) -> None:
    result = searched
    hits = result["structuredContent"]["results"]
    assert len(hits) == 2 and hits[0]["path"] == "guides/backup.md"
    assert json.loads(result["content"][0]["text"]) == result["structuredContent"]


def test_inspector_calls_index_status(inspect: Inspect) -> None:
    result = answer(inspect("--method", "tools/call", "--tool-name", "index_status"))
    assert result["structuredContent"]["state"] == "none"  # a fresh server: no run yet


def test_inspector_reports_a_tool_error(inspect: Inspect) -> None:
    done = inspect(
        "--method",
        "tools/call",
        "--tool-name",
        "search",
        "--tool-args-json",
        json.dumps({"query": "keys", "limit": 0}),
    )
    result = json.loads(done.stdout)
    assert result["isError"] is True
    assert json.loads(result["content"][0]["text"])["error"]["code"] == "invalid_argument"


def test_inspector_lists_and_reads_resources(inspect: Inspect) -> None:
    listed = answer(inspect("--method", "resources/list"))
    assert [r["uri"] for r in listed["resources"]] == [
        "kb://topic/",
        "kb://topic/archive",
        "kb://topic/guides",
        "kb://topic/notes",
    ]
    read = answer(inspect("--method", "resources/read", "--uri", "kb://doc/guides/keys.md"))
    content = read["contents"][0]
    assert content["mimeType"] == "text/markdown" and "vault rotate signing" in content["text"]
    refused = inspect("--method", "resources/read", "--uri", "kb://doc/%2e%2e%2fsecret.md")
    assert refused.returncode != 0 and "Resource not found" in refused.stderr
    assert "launch codes" not in refused.stdout + refused.stderr


def test_inspector_gets_a_prompt(inspect: Inspect) -> None:
    prompt = answer(
        inspect(
            "--method",
            "prompts/get",
            "--prompt-name",
            "summarize_topic",
            "--prompt-args",
            "topic=ops",
        )
    )
    assert "list_topics" in prompt["messages"][0]["content"]["text"]


def test_inspector_sees_search_hits_as_resource_links(searched: Any) -> None:
    result = searched
    hits = result["structuredContent"]["results"]
    links = [block for block in result["content"] if block["type"] == "resource_link"]
    assert [link["name"] for link in links] == [hit["path"] for hit in hits]
    for hit, link in zip(hits, links, strict=True):
        first, last = hit["answer_lines"]  # the lines that answer (decision 0056)
        assert link["uri"] == f"{hit['uri']}#L{first}-{last}"
        assert link["title"] and link["mimeType"] == "text/markdown"
        assert link["size"] == len(lines_of(hit["content"], hit["end_line"], first, last)
                                   .encode("utf-8"))


def test_inspector_sees_the_instructions_and_the_icons(inspect: Inspect) -> None:
    hello = answer(inspect("--method", "initialize"))
    assert "get_documents" in hello["instructions"]
    assert hello["serverInfo"]["description"]
    assert hello["serverInfo"]["icons"][0]["src"].startswith("data:image/svg+xml;base64,")
    assert "completions" in hello["capabilities"]
