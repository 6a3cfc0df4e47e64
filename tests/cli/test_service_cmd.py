"""``kb-mcp service install|status|remove``: systemd units for one knowledge base, checked
by ``systemd-analyze verify``; no systemd manager runs here, so systemctl is never asked."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kbmcp_adapters.service.plan import build_plan
from kbmcp_adapters.service.systemd import require_root
from kbmcp_adapters.service.units import Listen, ServicePlan, quoted, service_unit, socket_unit
from kbmcp_core.errors import ConfigError
from kbmcp_core.settings import Settings
from tests.cli.conftest import Invoke


def analyze(tmp_path: Path, units: list[Path], *, user: bool) -> None:
    """``systemd-analyze verify`` finds nothing to say of ``units``; skipped only where the
    tool is missing, and never under CI=true."""
    tool = shutil.which("systemd-analyze")
    if tool is None:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail("CI=true and systemd-analyze is missing")
        pytest.skip("systemd-analyze is not installed")
    runtime = tmp_path / "runtime"
    runtime.mkdir(exist_ok=True, mode=0o700)
    done = subprocess.run([tool, *(["--user"] if user else []), "verify",
                           *(str(u) for u in units)],
                          env={**os.environ, "XDG_RUNTIME_DIR": str(runtime)},
                          capture_output=True, text=True, timeout=60, check=False)
    assert (done.returncode, done.stdout + done.stderr) == (0, "")


def unit_folder(config_home: Path) -> Path:
    return config_home / "systemd" / "user"


def test_install_user_http_writes_a_socket_and_a_sandboxed_server(
        kb_mcp: Invoke, kb: Path, user_config_home: Path, tmp_path: Path) -> None:
    done = kb_mcp("service", "install", "--user", "--http", "8765", "--kb-path", str(kb))
    assert done.exit_code == 0, done.output
    folder = unit_folder(user_config_home)
    service = folder / "kb-mcp-kb.service"
    socket = folder / "kb-mcp-kb.socket"
    assert "ListenStream=127.0.0.1:8765\n" in socket.read_text()
    text = service.read_text()
    # the absolute program and knowledge base; the socket is systemd's
    exec_line = next(line for line in text.splitlines() if line.startswith("ExecStart="))
    program = exec_line.removeprefix("ExecStart=").split()[0]
    assert os.path.isabs(program) and Path(program).exists()
    assert f" serve --kb-path {kb.resolve()} --transport http" in exec_line
    assert "--port" not in exec_line and "--allow-remote" not in exec_line
    for line in ("NoNewPrivileges=yes", "ProtectSystem=strict", "Requires=kb-mcp-kb.socket",
                 f"Environment=XDG_CONFIG_HOME={user_config_home}"):
        assert f"{line}\n" in text
    assert f"ReadWritePaths=-{kb.resolve() / '.kb-mcp'} " in text
    assert (kb / ".kb-mcp").is_dir()  # ReadWritePaths needs it when the service starts
    assert "PrivateTmp" not in text  # a private /tmp would hide this knowledge base
    assert f"systemctl --user enable --now {socket.name}" in done.stdout
    analyze(tmp_path, [service, socket], user=True)


def test_install_without_http_keeps_the_index_in_sync(
        kb_mcp: Invoke, kb: Path, user_config_home: Path, tmp_path: Path) -> None:
    assert kb_mcp("service", "install", "--user", "--http", "8765",
                  "--kb-path", str(kb)).exit_code == 0
    done = kb_mcp("service", "install", "--user", "--kb-path", str(kb))
    assert done.exit_code == 0, done.output
    folder = unit_folder(user_config_home)
    assert not (folder / "kb-mcp-kb.socket").exists()  # the earlier HTTP socket is gone
    text = (folder / "kb-mcp-kb.service").read_text()
    assert f" watch --kb-path {kb.resolve()}\n" in text
    assert "WantedBy=default.target\n" in text
    analyze(tmp_path, [folder / "kb-mcp-kb.service"], user=True)


def test_status_and_remove(kb_mcp: Invoke, kb: Path, user_config_home: Path) -> None:
    missing = kb_mcp("service", "status", "--user", "--kb-path", str(kb))
    assert missing.exit_code == 1
    assert "no service kb-mcp-kb in" in missing.stderr
    assert kb_mcp("service", "install", "--user", "--http", "9000",
                  "--kb-path", str(kb)).exit_code == 0
    shown = kb_mcp("service", "status", "--user", "--kb-path", str(kb))
    assert shown.exit_code == 0, shown.output
    assert f"kb-mcp-kb.service: {unit_folder(user_config_home)}" in shown.stdout
    assert f"for {kb.resolve()}" in shown.stdout
    assert "listens on http://127.0.0.1:9000/mcp" in shown.stdout
    assert "systemd: no manager answers here" in shown.stdout
    gone = kb_mcp("service", "remove", "--user", "--kb-path", str(kb))
    assert gone.exit_code == 0, gone.output
    assert list(unit_folder(user_config_home).iterdir()) == []


def test_a_unit_of_another_folder_is_neither_replaced_nor_removed(
        kb_mcp: Invoke, kb: Path, tmp_path: Path, user_config_home: Path) -> None:
    other = tmp_path / "elsewhere" / "kb"
    other.mkdir(parents=True)
    assert kb_mcp("service", "install", "--user", "--kb-path", str(other)).exit_code == 0
    before = (unit_folder(user_config_home) / "kb-mcp-kb.service").read_text()
    for action in ("install", "remove"):
        done = kb_mcp("service", action, "--user", "--kb-path", str(kb))
        assert done.exit_code == 2
        assert f"was written for the knowledge base {other.resolve()}: choose another --name" \
            in done.stderr
    assert (unit_folder(user_config_home) / "kb-mcp-kb.service").read_text() == before
    named = kb_mcp("service", "install", "--user", "--name", "kb-mcp-notes",
                   "--kb-path", str(kb))
    assert named.exit_code == 0 and (unit_folder(user_config_home)
                                     / "kb-mcp-notes.service").is_file()


def test_beyond_loopback_a_token_comes_first(kb_mcp: Invoke, kb: Path,
                                             user_config_home: Path) -> None:
    args = ("service", "install", "--user", "--http", "8765", "--host", "0.0.0.0",
            "--kb-path", str(kb))
    refused = kb_mcp(*args)
    assert refused.exit_code == 2
    assert "refusing to serve 0.0.0.0 without a token" in refused.stderr
    assert not unit_folder(user_config_home).exists()
    assert kb_mcp("token", "create", "--kb-path", str(kb)).exit_code == 0
    assert kb_mcp(*args).exit_code == 0
    text = (unit_folder(user_config_home) / "kb-mcp-kb.service").read_text()
    assert " --transport http --allow-remote\n" in text
    assert "ListenStream=0.0.0.0:8765\n" in (unit_folder(user_config_home)
                                            / "kb-mcp-kb.socket").read_text()


def test_a_system_service_needs_root() -> None:
    with pytest.raises(ConfigError, match="needs root: run this with sudo, or add --user"):
        require_root(1000)
    require_root(0)


def system_plan(kb: Path, listen: Listen | None) -> ServicePlan:
    settings = Settings(kb_path=kb, index_dir=kb / ".kb-mcp")
    return build_plan(settings, name="kb-mcp-odd", program=(sys.executable, "-m", "kbmcp_cli"),
                      config=None, listen=listen, user_manager=False, environ={})


def test_a_system_unit_with_awkward_paths_verifies(tmp_path: Path) -> None:
    kb = tmp_path / "my notes 100% $HOME"
    kb.mkdir()
    plan = system_plan(kb, Listen("::1", 8765))
    (tmp_path / "units").mkdir()
    service = tmp_path / "units" / plan.service_file
    socket = tmp_path / "units" / plan.socket_file
    service.write_text(service_unit(plan))
    socket.write_text(socket_unit(plan))
    assert "ListenStream=[::1]:8765\n" in socket.read_text()
    assert f' --kb-path {quoted(str(kb.resolve()), command=True)} ' in service.read_text()
    assert "100%% $$HOME" in service.read_text()
    analyze(tmp_path, [service, socket], user=False)


def test_a_path_with_a_line_break_is_refused(tmp_path: Path) -> None:
    kb = tmp_path / "two\nlines"
    kb.mkdir()
    with pytest.raises(ConfigError, match="line break"):
        system_plan(kb, None)


def test_a_private_tmp_outside_tmp() -> None:
    settings = Settings(kb_path=Path("/srv/notes"), index_dir=Path("/srv/notes/.kb-mcp"))
    plan = build_plan(settings, name="kb-mcp-notes", program=("/usr/bin/kb-mcp",),
                      config=None, listen=None, user_manager=True,
                      environ={"XDG_CACHE_HOME": "/srv/cache"})
    assert "\nPrivateTmp=yes\n" in service_unit(plan)
