"""ADR-0004 / ADR-0005 as a client sees them: the offer, the reads and doctor, end to end."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from mcp.shared.exceptions import MCPError

from tests.conftest import make_big_pdf
from tests.e2e.conftest import Env, error_of, stdio_session, text_of
from tests.e2e.test_mcp_stdio import run
from tests.store_faults import kb_mcp_here

MIB = 1024 * 1024
NOTICE = "extracted text is longer than 1 MiB"


def cli(args: list[str], env: Env) -> subprocess.CompletedProcess[str]:
    """A command in this process: the index these tests serve, and the doctor's view of
    it; what crosses a process boundary here is the server's offer and reads."""
    return kb_mcp_here(args, {**os.environ, **env})


@pytest.fixture(scope="module")
def kb(tmp_path_factory: pytest.TempPathFactory, server_env: Env) -> Path:
    base = tmp_path_factory.mktemp("offer")
    root = base / "kb"
    files = {
        "notes/plain.md": "# Plain\n\nA short note about sourdough starters.\n",
        "notes/big.md": "# Ledger\n\n" + (
            "The quarterly ledger lists every shipment and customs reference.\n\n" * 33000),
        "notes/café menu.md": "# Café\n\nThe espresso menu changes with the season.\n",
        "drafts/hidden.md": "# Hidden\n\nA draft about kite festivals.\n",
        ".kb-mcpignore": "drafts/\n",
        "kb-mcp.toml": '[parsers]\nenabled = ["md", "pdf"]\n',
        "md-only.toml": '[parsers]\nenabled = ["md"]\n',
    }
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text, encoding="utf-8")
    assert (root / "notes/big.md").stat().st_size > 2 * MIB
    make_big_pdf(root / "papers/telemetry.pdf")
    (base / "outside.md").write_text("# Outside\n\nlaunch codes\n")
    os.symlink(base / "outside.md", root / "notes/escape.md")
    r = cli(["index", "--kb-path", str(root), "--config", str(root / "kb-mcp.toml")],
            server_env)
    assert r.returncode == 0, r.stderr
    (root / "notes/later.md").write_text("# Later\n\nwritten after indexing\n")
    os.mkfifo(root / "notes/pipe.md")
    return root


async def listing(client: Any) -> tuple[list[str], str]:
    uris = [r.uri for r in (await client.list_resources()).resources]
    bodies = ""
    for uri in uris:
        content = (await client.read_resource(uri)).contents[0]
        assert isinstance(content, types.TextResourceContents)
        bodies += content.text
    return uris, bodies


async def refused(client: Any, uri: str) -> None:
    with pytest.raises(MCPError) as exc:
        await client.read_resource(uri)
    assert exc.value.code == -32002, uri


def test_the_offer_and_the_reads_agree(kb: Path, tmp_path: Path, server_env: Env) -> None:
    # --no-index: the server serves the index as built (notes/later.md stays unindexed)
    config = ("--config", str(kb / "kb-mcp.toml"), "--no-index")

    async def body() -> None:
        async with stdio_session(kb, tmp_path / "err.log", server_env,
                                 extra_args=config) as client:
            uris, bodies = await listing(client)
            assert uris == sorted(uris)
            # a 2 MiB Markdown file: found by search, offered, read in ranges (0033)
            found = text_of(await client.call_tool(
                "search", {"query": "quarterly ledger shipment customs reference"}))
            hit = next(h for h in found["results"] if h["path"] == "notes/big.md")
            assert hit["uri"].startswith("kb://doc/notes/big.md")
            assert "kb://doc/notes/big.md" in bodies
            big = (await client.read_resource("kb://doc/notes/big.md")).contents[0]
            assert isinstance(big, types.TextResourceContents)
            assert len(big.text.encode()) <= MIB and "kb://doc/notes/big.md#L" in big.text
            whole = error_of(await client.call_tool("get_document", {"path": "notes/big.md"}))
            assert whole["code"] == "path_refused" and "read it in ranges" in whole["message"]
            # a 2 MiB PDF: offered, read as text, cut with a visible notice
            assert "kb://doc/papers/telemetry.pdf" in bodies
            pdf = (await client.read_resource("kb://doc/papers/telemetry.pdf")).contents[0]
            assert isinstance(pdf, types.TextResourceContents)
            assert pdf.mime_type == "text/plain" and NOTICE in pdf.text
            doc = text_of(await client.call_tool("get_document",
                                                 {"path": "papers/telemetry.pdf"}))
            assert doc["truncated"] is True and NOTICE not in doc["content"]
            # on disk, not indexed: get_document yes, resource no
            later = text_of(await client.call_tool("get_document", {"path": "notes/later.md"}))
            assert later["content"].startswith("# Later")
            await refused(client, "kb://doc/notes/later.md")
            # excluded by .kb-mcpignore: readable by path, not offered, not a resource
            hidden = text_of(await client.call_tool("get_document",
                                                    {"path": "drafts/hidden.md"}))
            assert "kite" in hidden["content"]
            assert "drafts" not in bodies
            await refused(client, "kb://doc/drafts/hidden.md")
            # non-ASCII and spaces round-trip through the URI the server hands out
            uri = "kb://doc/notes/caf%C3%A9%20menu.md"
            assert uri in bodies
            cafe = (await client.read_resource(uri)).contents[0]
            assert isinstance(cafe, types.TextResourceContents)
            assert "espresso" in cafe.text
            # hostile reads
            for path in ["notes/escape.md", "../outside.md", "notes/pipe.md"]:
                err = error_of(await client.call_tool("get_document", {"path": path}))
                assert err["code"] == "path_refused" and str(kb) not in err["message"]
            for uri in ["kb://doc/notes/escape.md", "kb://doc/%2e%2e%2foutside.md",
                        "kb://doc/notes/pipe.md"]:
                await refused(client, uri)

    run(body)
    r = cli(["doctor", "--kb-path", str(kb), "--config", str(kb / "kb-mcp.toml"),
             "--format", "json"], server_env)
    assert r.returncode == 0, r.stdout  # a document under the index cap is readable
    assert json.loads(r.stdout)["findings"] == []


def test_narrowed_formats_keep_rows_searchable_but_unoffered(
    kb: Path, tmp_path: Path, server_env: Env
) -> None:
    narrowed = ("--config", str(kb / "md-only.toml"), "--no-index")

    async def body() -> None:
        async with stdio_session(kb, tmp_path / "err.log", server_env,
                                 extra_args=narrowed) as client:
            found = text_of(await client.call_tool(
                "search", {"query": "telemetry appendix sensor calibration"}))
            hit = next(h for h in found["results"] if h["path"] == "papers/telemetry.pdf")
            assert "uri" not in hit
            _, bodies = await listing(client)
            assert "telemetry" not in bodies
            await refused(client, "kb://doc/papers/telemetry.pdf")

    run(body)
    r = cli(["doctor", "--kb-path", str(kb), "--config", str(kb / "md-only.toml"),
             "--format", "json"], server_env)
    checks = {f["check"]: f for f in json.loads(r.stdout)["findings"]}
    assert r.returncode == 1
    assert checks["extension-not-enabled"]["samples"] == ["papers/telemetry.pdf"]


def test_sizes_from_before_the_migration_and_growth_past_the_index_cap(
    kb: Path, tmp_path: Path, server_env: Env
) -> None:
    root = tmp_path / "copy"
    import shutil

    shutil.copytree(kb, root, symlinks=True, ignore=shutil.ignore_patterns("pipe.md"))
    config = ("--config", str(root / "kb-mcp.toml"))
    serve_args = (*config, "--no-index")  # the server itself backfills nothing
    with sqlite3.connect(root / ".kb-mcp" / "index.db") as conn:
        conn.execute("UPDATE documents SET size_bytes = NULL")

    async def offered() -> list[str]:
        async with stdio_session(root, tmp_path / "err.log", server_env,
                                 extra_args=serve_args) as client:
            _, bodies = await listing(client)
            return [line for line in bodies.splitlines() if "kb://doc/" in line]

    lines: list[str] = []

    async def collect() -> None:
        lines[:] = await offered()

    run(collect)
    assert any("notes/big.md" in line for line in lines)  # unknown size is offered
    r = cli(["doctor", "--kb-path", str(root), *config, "--format", "json"], server_env)
    checks = {f["check"]: f for f in json.loads(r.stdout)["findings"]}
    assert checks["size-not-recorded"]["count"] == 4
    assert "without re-embedding" in checks["size-not-recorded"]["remedy"]

    r = cli(["index", "--kb-path", str(root), *config, "--format", "json"], server_env)
    summary = json.loads(r.stdout)
    assert summary["chunks_embedded"] == 1 and summary["sizes_backfilled"] == 4  # later.md
    run(collect)
    assert any("notes/big.md" in line for line in lines)  # 2 MiB: offered, read in ranges

    with open(root / "notes/plain.md", "r+b") as f:  # grows past the 50 MiB index cap
        f.truncate(60 * MIB)
    r = cli(["index", "--kb-path", str(root), *config, "--format", "json"], server_env)
    assert "notes/plain.md" in " ".join(json.loads(r.stdout)["warnings"])
    with sqlite3.connect(root / ".kb-mcp" / "index.db") as conn:
        assert conn.execute("SELECT size_bytes FROM documents WHERE path = 'notes/plain.md'"
                            ).fetchone() == (60 * MIB,)
    run(collect)
    assert not any("notes/plain.md" in line for line in lines)
    r = cli(["doctor", "--kb-path", str(root), *config, "--format", "json"], server_env)
    samples = json.loads(r.stdout)["findings"][0]["samples"]
    assert any("notes/plain.md" in s for s in samples)
