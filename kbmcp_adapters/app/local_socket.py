"""The local search channel: how ``kb-mcp search`` asks a running server for the same index.

A ``kb-mcp serve`` (any transport) or ``kb-mcp watch`` listens on a Unix socket in the
index folder (``kb-mcp.sock``, mode 0600; see ``local_search_server``). The command line
connects, checks that the peer runs as the same user (``SO_PEERCRED``), sends one request
line and reads two answer lines: an acceptance (or the reason for a refusal), then the
search response exactly as ``SearchResponse.as_dict()`` gives it. A server may refuse
before reading the request (another user, too many clients) and close at once: the
client then reads that refusal even when its own request could no longer be written
(``EPIPE``), so the answer never depends on who was faster. Anything else (no socket, a
stale one, another user, another kb-mcp version or configuration, an error) means
"search in this process instead" (decision 0018).

Standard library only, and nothing heavy: the command line imports this before click.
"""

from __future__ import annotations

import json
import os
import socket
import struct
import sys
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

#: ``typing`` costs the command line's fast route milliseconds: type checkers see this.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from kbmcp_core.settings import Settings

#: The socket's name in the index folder.
SOCKET_NAME = "kb-mcp.sock"
#: ``kbmcp_core.settings``' names, repeated so the command line's fast route need not
#: import the settings module (a unit test keeps them equal).
INDEX_DIR_NAME = ".kb-mcp"
CONFIG_FILE_NAME = "kb-mcp.toml"
#: Bumped whenever the request or answer lines change shape.
PROTOCOL = 1
#: Longest wait (s) for a server to accept a request; past it the command searches itself.
ACCEPT_TIMEOUT_S = 5.0
#: Longest wait (s) for an accepted search (the server may be loading the model).
ANSWER_TIMEOUT_S = 300.0
#: Largest request line a server reads, and largest answer line a client reads.
MAX_REQUEST_BYTES = 1 << 20
MAX_ANSWER_BYTES = 64 << 20
#: Settings that only steer writing: a server and a command line may differ in them and
#: still give the same search answer.
_WRITER_ONLY = frozenset({"watch", "watch_debounce_ms", "writer_lock_timeout_s",
                          "embedding_batch_size", "read_only"})
#: ``struct ucred`` (pid, uid, gid), as ``SO_PEERCRED`` returns it.
_UCRED = struct.Struct("3i")
#: Unix socket addresses hold ~108 bytes; a longer path is reached through /proc.
_MAX_ADDRESS = 100


def supported() -> bool:
    """Unix sockets with peer credentials (Linux): elsewhere every search runs locally."""
    return hasattr(socket, "AF_UNIX") and hasattr(socket, "SO_PEERCRED")


def socket_path(settings: Settings) -> Path:
    return settings.index_dir / SOCKET_NAME


def peer_credentials(sock: socket.socket) -> tuple[int, int, int]:
    """(pid, uid, gid) of the process at the other end of a connected Unix socket."""
    raw = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, _UCRED.size)
    pid, uid, gid = _UCRED.unpack(raw)
    return pid, uid, gid


_version: str | None = None


def kb_mcp_version() -> str:
    """The installed kb-mcp version, read from its ``.dist-info`` folder name (as cheap as a
    directory listing; ``importlib.metadata`` costs tens of milliseconds)."""
    global _version
    if _version is None:
        _version = "unknown"
        for entry in sys.path:
            if os.path.basename(entry) not in ("site-packages", "dist-packages"):
                continue
            try:
                names = os.listdir(entry)
            except OSError:
                continue
            found = [n for n in names if n.startswith("kb_mcp-") and n.endswith(".dist-info")]
            if found:
                _version = min(found)[len("kb_mcp-"):-len(".dist-info")]
                break
    return _version


def settings_identity(settings: Settings) -> str:
    """A digest of every setting that can change a search answer (the index, the model,
    the formats, the search limits...): a server answers only a command line whose
    configuration gives the same digest. Values are hashed, never sent."""
    import dataclasses
    import hashlib

    digest = hashlib.sha256()
    for field in dataclasses.fields(settings):
        if field.name in _WRITER_ONLY or not field.compare:  # not a setting (config_origin)
            continue
        value: Any = getattr(settings, field.name)
        if isinstance(value, Mapping):
            value = sorted((str(k), repr(v)) for k, v in value.items())
        digest.update(f"{field.name}={value!r}\n".encode("utf-8", "surrogatepass"))
    return digest.hexdigest()


def encode_line(message: Mapping[str, Any]) -> bytes:
    return (json.dumps(message, ensure_ascii=False, separators=(",", ":")) + "\n").encode(
        "utf-8", "surrogatepass")


def decode_line(line: bytes) -> dict[str, Any]:
    """One JSON object from a line; ``ValueError`` for anything else (a cut-off line too)."""
    if not line.endswith(b"\n"):
        raise ValueError("the line was cut off")
    value = json.loads(line.decode("utf-8", "surrogatepass"))
    if not isinstance(value, dict):
        raise ValueError("not a JSON object")
    return value


@contextmanager
def address_in(folder: Path, name: str) -> Iterator[str]:
    """An address for ``folder/name`` that fits in a socket address: the path itself, or
    the same place reached through an open descriptor of the folder (/proc/self/fd)."""
    direct = str(folder / name)
    if len(os.fsencode(direct)) < _MAX_ADDRESS:
        yield direct
        return
    fd = os.open(folder, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        yield f"/proc/self/fd/{fd}/{name}"
    finally:
        os.close(fd)


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
    request = {"protocol": PROTOCOL, "version": kb_mcp_version(), **identity, "query": query,
               "params": dict(params)}
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
            pid, uid, _ = peer_credentials(sock)
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


__all__ = ["ANSWER_TIMEOUT_S", "CONFIG_FILE_NAME", "INDEX_DIR_NAME", "PROTOCOL", "SOCKET_NAME",
           "Reply", "address_in", "ask", "ask_with_inputs", "decode_line", "encode_line",
           "exchange", "kb_mcp_version", "peer_credentials", "settings_identity", "socket_path",
           "supported"]
