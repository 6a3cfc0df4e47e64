"""The client end of the local search channel: ``kb-mcp search`` asks a running server.

Standard library only, and nothing heavy: the command line imports this before click.
"""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Mapping
from pathlib import Path

from kbmcp_adapters.local_search import channel
from kbmcp_adapters.local_search.channel import (
    ACCEPT_TIMEOUT_S,
    ANSWER_TIMEOUT_S,
    MAX_ANSWER_BYTES,
    MAX_REQUEST_BYTES,
    PROTOCOL,
    SOCKET_NAME,
    address_in,
    decode_line,
    encode_line,
    settings_identity,
    supported,
)

#: ``typing`` costs the command line's fast route milliseconds: type checkers see this.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from kbmcp_core.settings import Settings


class Reply:
    """What the server said: its search response, or None when the caller must search
    itself; ``note`` says which, and why (shown by ``kb-mcp search --verbose``). (A plain
    class: ``dataclasses`` costs the fast route milliseconds.)"""

    __slots__ = ("note", "response", "server_pid", "server_seconds")

    def __init__(self, response: dict[str, Any] | None, note: str,
                 server_pid: int | None = None, server_seconds: float | None = None) -> None:
        self.response = response
        self.note = note
        self.server_pid = server_pid
        self.server_seconds = server_seconds


def ask(settings: Settings, query: str, params: Mapping[str, Any]) -> Reply:
    """Ask a server of this index to run ``KnowledgeBase.search(query, **params)``; it
    answers only if its settings give the same ``settings_identity``."""
    return exchange(settings.index_dir, {"settings": settings_identity(settings)}, query,
                    params)


def ask_with_inputs(index_dir: Path, kb_path: str, cwd: str, query: str,
                    params: Mapping[str, Any]) -> Reply:
    """Like ``ask``, for a command line that has not read its configuration (no config
    file given or in ``cwd``): the server builds the settings from the same inputs and
    answers only if they give its own ``settings_identity``."""
    return exchange(index_dir, {"inputs": {"kb_path": kb_path, "cwd": cwd}}, query, params)


def exchange(index_dir: Path, identity: Mapping[str, Any], query: str,
             params: Mapping[str, Any]) -> Reply:
    """One request to the server of ``index_dir``, if there is one."""
    if not supported():
        return Reply(None, "no local socket on this platform")
    where = index_dir / SOCKET_NAME
    request = {"protocol": PROTOCOL, "version": channel.kb_mcp_version(), **identity,
               "query": query, "params": dict(params)}
    started = time.perf_counter()
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(ACCEPT_TIMEOUT_S)
            try:
                with address_in(index_dir, SOCKET_NAME) as address:
                    sock.connect(address)
            except FileNotFoundError:
                return Reply(None, f"no server socket at {where}")
            except ConnectionRefusedError:
                return Reply(None, f"stale socket at {where}: no server listens on it")
            pid, uid, _ = channel.peer_credentials(sock)
            if uid != os.geteuid():
                return Reply(None, f"the socket at {where} belongs to uid {uid}, not to you")
            unsent: OSError | None = None
            try:
                sock.sendall(encode_line(request))
            except (BrokenPipeError, ConnectionResetError) as exc:
                unsent = exc  # it refused (and hung up) before reading: the refusal waits
            with sock.makefile("rb") as answers:
                line = answers.readline(MAX_REQUEST_BYTES)
                if unsent is not None and not line:
                    raise unsent
                head = decode_line(line)
                if head.get("accepted") is not True:
                    return Reply(None, f"the server (pid {pid}) declined: "
                                       f"{head.get('reason', 'no reason given')}")
                if unsent is not None:
                    raise unsent
                sock.settimeout(ANSWER_TIMEOUT_S)
                body = decode_line(answers.readline(MAX_ANSWER_BYTES))
    except (OSError, ValueError, UnicodeError) as exc:
        return Reply(None, f"the server at {where} did not answer ({type(exc).__name__}: {exc})")
    response = body.get("response")
    if body.get("ok") is not True or not isinstance(response, dict):
        return Reply(None, f"the server (pid {pid}) could not answer: "
                           f"{body.get('error', 'malformed answer')}")
    seconds = body.get("seconds")
    took = seconds if isinstance(seconds, float) else None
    wall = (time.perf_counter() - started) * 1000
    searched = f"search {took * 1000:.1f} ms, " if took is not None else ""
    return Reply(response, f"answered by the kb-mcp server (pid {pid}) at {where} "
                           f"({searched}round trip {wall:.1f} ms)", pid, took)


__all__ = ["Reply", "ask", "ask_with_inputs", "exchange"]
