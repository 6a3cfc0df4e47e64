"""Which socket systemd passed `kb-mcp serve`: LISTEN_PID/LISTEN_FDS read as sd_listen_fds
reads them, and taken out of the environment the server's own children get."""

from __future__ import annotations

import pytest

from kbmcp_adapters.mcp_server.socket_activation import inherited_socket, passed_count
from kbmcp_core.errors import ConfigError


def test_sockets_meant_for_another_process_are_not_taken() -> None:
    env = {"LISTEN_PID": "1", "LISTEN_FDS": "1", "LISTEN_FDNAMES": "kb", "PATH": "/bin"}
    assert inherited_socket(env, 4242) is None
    assert env == {"PATH": "/bin"}  # a worker this server starts never takes them either


def test_no_variables_no_socket() -> None:
    assert passed_count({}, 4242) == 0


def test_several_sockets_or_a_bad_count_are_refused_clearly() -> None:
    with pytest.raises(ConfigError, match="systemd passed 2 sockets; kb-mcp serves one"):
        inherited_socket({"LISTEN_PID": "4242", "LISTEN_FDS": "2"}, 4242)
    with pytest.raises(ConfigError, match="LISTEN_FDS is not a number"):
        passed_count({"LISTEN_PID": "4242", "LISTEN_FDS": "x"}, 4242)
