"""Socket activation: the listening socket that systemd (a ``.socket`` unit, or
``systemd-socket-activate``) hands ``kb-mcp serve --transport http`` as file descriptor 3,
announced by ``LISTEN_FDS`` and ``LISTEN_PID`` (sd_listen_fds(3); decision 0049)."""

from __future__ import annotations

import socket
from collections.abc import MutableMapping

from kbmcp_core.errors import ConfigError

#: The first passed descriptor (``SD_LISTEN_FDS_START``).
FIRST_FD = 3
_VARIABLES = ("LISTEN_PID", "LISTEN_FDS", "LISTEN_FDNAMES")


def passed_count(environ: MutableMapping[str, str], pid: int) -> int:
    """How many sockets were passed to the process ``pid``, and the variables that say so
    removed from ``environ`` (a process this one starts must not take them for its own).
    0 unless ``LISTEN_PID`` names ``pid``: the variables may have been meant for a parent."""
    values = {name: environ.pop(name, None) for name in _VARIABLES}
    if values["LISTEN_PID"] != str(pid):
        return 0
    count = values["LISTEN_FDS"] or "0"
    if not count.isdigit():
        raise ConfigError(f"LISTEN_FDS is not a number of sockets: {count!r}")
    return int(count)


def inherited_socket(environ: MutableMapping[str, str], pid: int) -> socket.socket | None:
    """The one listening TCP socket passed to this process, or None when none was passed.
    Anything else passed (several sockets, a Unix or UDP socket, a connection as with
    ``Accept=yes``) is a ``ConfigError`` naming what the unit must say instead."""
    count = passed_count(environ, pid)
    if count == 0:
        return None
    if count != 1:
        raise ConfigError(f"systemd passed {count} sockets; kb-mcp serves one (give the "
                          ".socket unit a single ListenStream=)")
    try:
        sock = socket.socket(fileno=FIRST_FD)
    except OSError as exc:
        raise ConfigError(f"the socket systemd passed cannot be used: "
                          f"{exc.strerror or exc}") from None
    if sock.family not in (socket.AF_INET, socket.AF_INET6) or sock.type != socket.SOCK_STREAM:
        sock.detach()
        raise ConfigError("the socket systemd passed is not a TCP socket: the .socket unit "
                          "needs ListenStream=ADDRESS:PORT")
    if not sock.getsockopt(socket.SOL_SOCKET, socket.SO_ACCEPTCONN):
        sock.detach()
        raise ConfigError("the socket systemd passed is not listening: the .socket unit "
                          "needs Accept=no (the default)")
    return sock


def listening_address(sock: socket.socket) -> tuple[str, int]:
    """The host (an IPv6 address in brackets) and port a listening socket is bound to."""
    address, port = sock.getsockname()[:2]
    return (f"[{address}]" if ":" in address else address), int(port)
