"""A hostile folder through the real `kb-mcp index`: exit 0, no traceback, and every file
is found (searchable), refused (one warning each) or skipped (counted with its reason)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from tests.e2e.conftest import DEADLINE, Env, error_of, kb_mcp_command, stdio_session, text_of
from tests.e2e.test_mcp_stdio import run

MIB = 1024 * 1024
OUTSIDE = "OUTSIDE-MARKER"
DEEP = "/".join(f"d{i}" for i in range(1, 31))

#: path -> (a query that finds it, a phrase its hit must show)
FOUND = {
    "ok.md": ("ordinary note about kayaks", "kayaks"),
    "日本 語.md": ("会議室の予約方法", "会議室の予約方法"),
    f"{DEEP}/deep.md": ("deepest narwhal note", "narwhal"),
    "big-2mib.md": ("harbour ledger tide tables mooring fees", "mooring fees"),
    "broken-fm.md": ("broken frontmatter platypus", "platypus"),
    "unterminated-fm.md": ("unterminated frontmatter echidna", "echidna"),
    "nul.md": ("quokka sentence nul byte", "sentence has a nul byte"),
    "nul.txt": ("wombat text nul byte", "wombat text"),
    "..md": ("the dot command reads a file into the shell", "dot command"),
    ".hidden.md": ("hidden lemur notes", "lemur"),
}
#: path -> what its one warning says (a refused file is not searchable)
REFUSED = {
    "abs-link.md": "symbolic link",
    "dotdot-link.md": "symbolic link",
    "linked-dir": "symbolic link to a folder",
    "loop.md": "symbolic link",
    "dangling.md": "symbolic link",
    "hard.md": "more than one hard link",
    "pipe.md": "not a regular file",
    "huge-60mib.txt": "larger than the 50 MiB index cap",
    "bad-utf8.md": "not valid UTF-8",
    "corrupt.pdf": "not a readable PDF",
    "empty.pdf": "not a readable PDF",
    "bad-\\xff.md": "file name is not valid UTF-8; rename it",
}
#: indexed, with a warning about part of it
WARNED_FOUND = {
    "broken-fm.md": "frontmatter ignored",
    "unterminated-fm.md": "frontmatter not closed",
    "nul.md": "NUL bytes",
    "nul.txt": "NUL bytes",
}
SKIPPED = {
    "symbolic link": 5,  # four links to files (one a loop, one dangling), one to a folder
    "more than one hard link": 1,
    "not a regular file": 1,
    "name not valid UTF-8": 1,
    "over the 50 MiB index cap": 1,
    "excluded by .kb-mcpignore": 1,  # the private/ folder, never walked
    "not a supported format": 3,  # kb-mcp.toml, photo.heic and a bare ".md" dotfile
}


def make_hostile_folder(base: Path) -> Path:
    kb, out = base / "kb", base / "outside"
    out.mkdir()
    (out / "secret.md").write_text(f"# Secret\n\n{OUTSIDE} launch codes\n")
    (out / "hard-target.md").write_text(f"# Hard\n\n{OUTSIDE} hard link body\n")
    (out / "dir").mkdir()
    (out / "dir" / "x.md").write_text(f"# X\n\n{OUTSIDE} folder body\n")
    files: dict[str, str | bytes] = {
        "kb-mcp.toml": '[parsers]\nenabled = ["md", "txt", "pdf"]\n',
        ".kb-mcpignore": "private/\n",
        "private/plan.md": "# Plan\n\nthe ignored zebra plan\n",
        "ok.md": "# OK\n\nAn ordinary note about kayaks.\n",
        "日本 語.md": "# 会議室\n\n東京の会議室の予約方法について説明します。\n",
        f"{DEEP}/deep.md": "# Deep\n\nThe deepest narwhal note.\n",
        "big-2mib.md": "# Ledger\n\n" + "The harbour ledger records tide tables and mooring "
                       "fees for every berth.\n\n" * (2 * MIB // 70),
        "bad-utf8.md": b"# Broken\n\nlatin-1 caf\xe9 text about herons\n",
        "nul.md": b"# Nul\n\nThe quokka\x00 sentence has a nul byte.\n",
        "nul.txt": b"wombat text\x00 with a nul byte in a text file\n",
        "broken-fm.md": "---\ntitle: [unclosed\ntags: {\n---\n# Body\n\nbroken frontmatter "
                        "platypus body\n",
        "unterminated-fm.md": "---\ntitle: Never closed\ntags: [a]\n# Body\n\nunterminated "
                              "frontmatter echidna text\n",
        "corrupt.pdf": b"%PDF-1.7\n1 0 obj << /Type /Catalog >>\ngarbage\n",
        "empty.pdf": b"",
        "..md": "# .\n\nThe dot command reads a file into the shell.\n",
        ".hidden.md": "# Hidden\n\nhidden lemur notes\n",
        ".md": "a dotfile named md\n",
        "photo.heic": b"\x89PNG\r\n",
    }
    for rel, content in files.items():
        path = kb / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
    os.symlink(out / "secret.md", kb / "abs-link.md")
    os.symlink("../outside/secret.md", kb / "dotdot-link.md")
    os.symlink(out / "dir", kb / "linked-dir")
    os.symlink("loop.md", kb / "loop.md")
    os.symlink("nowhere.md", kb / "dangling.md")
    os.link(out / "hard-target.md", kb / "hard.md")
    os.mkfifo(kb / "pipe.md")
    with open(kb / "huge-60mib.txt", "wb") as f:
        f.truncate(60 * MIB)  # sparse: 60 MiB by stat, no disk used
    with open(os.fsencode(kb) + b"/bad-\xff.md", "wb") as f:
        f.write(b"# Bad name\n\nbad name body about ibexes\n")
    return kb


#: Names there that are not served, with the words the server's log gives as the reason.
NOT_SERVED = {
    "abs-link.md": "symbolic link", "linked-dir/x.md": "folder on the way",
    "hard.md": "hard link", "pipe.md": "not a regular file", "d1": "not a supported format",
}


def test_a_hostile_folder_indexes_and_every_file_is_accounted_for(
    tmp_path: Path, server_env: Env
) -> None:
    kb = make_hostile_folder(tmp_path)
    config = ("--config", str(kb / "kb-mcp.toml"))
    done = subprocess.run(
        [*kb_mcp_command(), "index", "--kb-path", str(kb), *config, "--format", "json"],
        env={**os.environ, **server_env}, capture_output=True, text=True, timeout=DEADLINE,
        check=False)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    summary = json.loads(done.stdout)
    warnings: dict[str, list[str]] = {}
    for line in summary["warnings"]:
        path, _, reason = line.partition(": ")
        warnings.setdefault(path, []).append(reason)
    for path, reason in {**REFUSED, **WARNED_FOUND}.items():
        assert len(warnings.get(path, [])) == 1, (path, warnings.get(path))
        assert reason in warnings[path][0], (path, warnings[path])
        assert f"{path}: {warnings[path][0]}" in done.stderr  # the user saw it
    assert set(warnings) == set(REFUSED) | set(WARNED_FOUND)
    assert summary["skipped_reasons"] == SKIPPED
    assert summary["skipped"] == sum(SKIPPED.values())
    assert summary["added"] == len(FOUND)
    assert summary["failed"] == 3  # bad-utf8.md, corrupt.pdf, empty.pdf

    async def body() -> None:
        async with stdio_session(kb, tmp_path / "err.log", server_env,
                                 extra_args=config) as client:
            for path, (query, phrase) in FOUND.items():
                found = text_of(await client.call_tool("search", {"query": query,
                                                                  "limit": 3}))
                top = found["results"][0]
                assert top["path"] == path, (query, [h["path"] for h in found["results"]])
                assert phrase in top["content"] and "\x00" not in top["content"]
            for query in ("launch codes hard link folder body", "ignored zebra plan",
                          "ibexes", "herons"):
                found = text_of(await client.call_tool("search", {"query": query}))
                for hit in found["results"]:
                    assert OUTSIDE not in hit["content"]
                    assert hit["path"] in FOUND, hit["path"]
            doc = text_of(await client.call_tool("get_document", {"path": "日本 語.md"}))
            assert "会議室の予約方法" in doc["content"]
            for path in NOT_SERVED:  # answered as a missing name; the log says why
                error = error_of(await client.call_tool("get_document", {"path": path}))
                assert error == {"code": "path_refused",
                                 "message": f"{path!r} refused: no such document"}, error
            error = error_of(await client.call_tool("get_document", {"path": "big-2mib.md"}))
            assert error["code"] == "path_refused" and "read cap" in error["message"], error
            assert OUTSIDE not in error["message"] and str(tmp_path) not in error["message"]

    run(body)
    log = (tmp_path / "err.log").read_text(encoding="utf-8")
    assert "Traceback" not in log
    for path, words in NOT_SERVED.items():
        assert any(repr(path) in line and words in line for line in log.splitlines()), path
