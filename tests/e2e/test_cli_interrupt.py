"""Ctrl-C during `kb-mcp index`: exit 130 with one line saying how to finish, no
traceback; the next run resumes and completes the index."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path

from tests.conftest import write_files
from tests.e2e.conftest import DEADLINE, LineReader
from tests.e2e.test_cli_index import KB_MCP, run


def _as_a_terminals_foreground_job() -> None:
    """Ctrl-C reaches the command: a suite started in the background by a non-interactive
    shell runs with SIGINT ignored, which a child inherits (and Python then installs no
    KeyboardInterrupt), while a terminal's foreground job has the default."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_ctrl_c_during_index_exits_130_and_the_next_run_resumes(
        tmp_path: Path, kb_env: dict[str, str]) -> None:
    kb = tmp_path / "kb"
    # 200 short notes of one section each: a run long enough to interrupt (4 chunks a
    # batch), and about a third of the tokens test_cli_index's notes give the model to embed
    write_files(kb, {f"topic{i % 7}/note-{i:03d}.md":
                     f"# Note {i}\n\nNote {i} talks about subject {i * 7919 % 1000}: "
                     f"{'lorem ipsum ' * 8}\n" for i in range(200)})
    (kb / "kb-mcp.toml").write_text("[embedding]\nbatch_size = 4\n")
    config = ["--kb-path", str(kb), "--config", str(kb / "kb-mcp.toml")]
    proc = subprocess.Popen([*KB_MCP, "index", *config], env={**kb_env, "PYTHONUNBUFFERED": "1"},
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True,
                            preexec_fn=_as_a_terminals_foreground_job)
    assert proc.stderr is not None and proc.stdout is not None
    log = LineReader(proc.stderr)
    try:
        log.wait_for(r"^kb-mcp: indexing: text \d+/200 files")  # the run is under way
        assert proc.poll() is None, "the run finished before Ctrl-C"
        os.killpg(proc.pid, signal.SIGINT)  # what a terminal sends the foreground group
        code = proc.wait(timeout=DEADLINE)
        out = proc.stdout.read()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=DEADLINE)
        proc.stdout.close()
    err = log.drain()
    assert code == 130, (code, err)
    assert err.rstrip().splitlines()[-1] == "kb-mcp: stopped; run again to resume", err
    assert "Traceback" not in err and "Aborted" not in err and out == ""

    again = run(["index", *config, "--format", "json"], kb_env)
    assert again.returncode == 0, again.stderr
    summary = json.loads(again.stdout)
    assert summary["added"] + summary["unchanged"] + summary["updated"] == 200
    status = run(["status", "--format", "json", *config], kb_env)
    assert status.returncode == 0 and json.loads(status.stdout)["documents"] == 200
