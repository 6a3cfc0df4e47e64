"""The local search channel: what both ends share (names, framing, peer and settings checks).

A ``kb-mcp serve`` (any transport) or ``kb-mcp watch`` listens on a Unix socket in the
index folder (``kb-mcp.sock``, mode 0600; see ``server``). The command line (``client``)
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
        if field.name == "embedding_model" and settings.embedding_model_follows_index:
            value = "the index's own"  # a server has read it, a command line has not (0046)
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


__all__ = ["ACCEPT_TIMEOUT_S", "ANSWER_TIMEOUT_S", "CONFIG_FILE_NAME", "INDEX_DIR_NAME",
           "MAX_ANSWER_BYTES", "MAX_REQUEST_BYTES", "PROTOCOL", "SOCKET_NAME", "address_in",
           "decode_line", "encode_line", "kb_mcp_version", "peer_credentials",
           "settings_identity", "socket_path", "supported"]
