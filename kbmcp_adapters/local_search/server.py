"""The server end of the local search channel: a Unix socket in the index folder, mode 0600,
answering ``kb-mcp search`` for the user who owns the process (decision 0018).

Created without a race: the socket is bound in a fresh 0700 folder, made 0600 there, then
hard-linked into place (which fails if the name exists); a name that exists is replaced
only when nobody listens on it (a stale socket left by a killed process). Every decision
goes through one open descriptor of the index folder. On close the socket is removed,
but only while the name still holds this server's socket.
"""

from __future__ import annotations

import contextlib
import logging
import os
import secrets
import socket
import stat
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kbmcp_adapters.local_search.channel import (
    MAX_REQUEST_BYTES,
    PROTOCOL,
    SOCKET_NAME,
    decode_line,
    encode_line,
    kb_mcp_version,
    peer_credentials,
    settings_identity,
    supported,
)

if TYPE_CHECKING:
    from kbmcp_adapters.app.knowledge_base import KnowledgeBase
    from kbmcp_core.settings import Settings

log = logging.getLogger(__name__)

#: Runs one search: (query, keyword arguments of ``KnowledgeBase.search``) -> as_dict().
SearchFn = Callable[[str, dict[str, Any]], dict[str, Any]]
#: Searches answered at once; one more is declined ("busy") and runs in its own process.
MAX_CLIENTS = 16
#: Longest wait (s) for a client's request line.
REQUEST_TIMEOUT_S = 10.0
_BOUND_NAME = "s"


class SocketUnavailable(Exception):
    """The socket cannot be offered (the name is taken, the folder is not writable...)."""


class LocalSearchServer:
    """Answers local searches for one index on threads, until ``close()``."""

    def __init__(self, settings: Settings, search: SearchFn, *, uid: int | None = None) -> None:
        """``uid``: the only user answered (default: this process's effective user)."""
        self.settings = settings
        self.path = settings.index_dir / SOCKET_NAME
        self._search = search
        self._uid = os.geteuid() if uid is None else uid
        self._identity = settings_identity(settings)
        self._version = kb_mcp_version()
        self._slots = threading.BoundedSemaphore(MAX_CLIENTS)
        self._closed = threading.Event()
        self._close_lock = threading.Lock()
        self._dir_fd = -1
        self._inode: tuple[int, int] | None = None
        self._sock: socket.socket | None = None
        self._thread: threading.Thread | None = None

    @classmethod
    def start(cls, settings: Settings, search: SearchFn) -> LocalSearchServer | None:
        """The running server, or None (logged) when no socket can be offered: searches
        from the command line then run in their own process, as without a server."""
        if not supported():
            return None
        server = cls(settings, search)
        try:
            server.listen()
        except (OSError, SocketUnavailable) as exc:
            why = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
            log.info("`kb-mcp search` will not be answered by this process: %s", why)
            return None
        log.info("answering `kb-mcp search` on %s", server.path)
        return server

    def listen(self) -> None:
        """Create the socket and answer on a thread (``SocketUnavailable``/``OSError``)."""
        self._dir_fd = os.open(self.settings.index_dir,
                               os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            self._sock = self._bind()
        except BaseException:
            os.close(self._dir_fd)
            self._dir_fd = -1
            raise
        self._thread = threading.Thread(target=self._accept_loop, name="kb-mcp-local-search",
                                        daemon=True)
        self._thread.start()

    # -- creating and removing the socket ------------------------------------------------
    def _bind(self) -> socket.socket:
        private = f".kb-mcp-sock-{os.getpid()}-{secrets.token_hex(4)}"
        os.mkdir(private, 0o700, dir_fd=self._dir_fd)
        try:
            priv_fd = os.open(private, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW
                              | os.O_CLOEXEC, dir_fd=self._dir_fd)
            try:
                st = os.fstat(priv_fd)
                if st.st_uid != os.geteuid() or st.st_mode & 0o077:
                    raise SocketUnavailable(f"{private} in the index folder was tampered with")
                sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                try:
                    sock.bind(f"/proc/self/fd/{priv_fd}/{_BOUND_NAME}")
                    # nobody else can reach the socket before this: its folder is 0700
                    os.chmod(_BOUND_NAME, 0o600, dir_fd=priv_fd)
                    sock.listen(MAX_CLIENTS)
                    self._publish(priv_fd)
                except BaseException:
                    sock.close()
                    raise
                return sock
            finally:
                with contextlib.suppress(OSError):
                    os.unlink(_BOUND_NAME, dir_fd=priv_fd)
                os.close(priv_fd)
        finally:
            with contextlib.suppress(OSError):
                os.rmdir(private, dir_fd=self._dir_fd)

    def _publish(self, priv_fd: int) -> None:
        """Give the bound socket its public name: a new name, or a stale socket's."""
        try:
            os.link(_BOUND_NAME, SOCKET_NAME, src_dir_fd=priv_fd, dst_dir_fd=self._dir_fd)
        except FileExistsError:
            self._check_stale()
            os.rename(_BOUND_NAME, SOCKET_NAME, src_dir_fd=priv_fd, dst_dir_fd=self._dir_fd)
        st = os.stat(SOCKET_NAME, dir_fd=self._dir_fd, follow_symlinks=False)
        self._inode = (st.st_dev, st.st_ino)

    def _check_stale(self) -> None:
        """Return when the existing name is a socket nobody listens on; else refuse."""
        st = os.stat(SOCKET_NAME, dir_fd=self._dir_fd, follow_symlinks=False)
        if not stat.S_ISSOCK(st.st_mode):
            raise SocketUnavailable(f"{self.path} exists and is not a socket; remove it")
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
            probe.settimeout(1.0)
            try:
                probe.connect(f"/proc/self/fd/{self._dir_fd}/{SOCKET_NAME}")
            except ConnectionRefusedError:
                log.info("replacing the stale socket %s (its process is gone)", self.path)
                return
            except OSError as exc:
                raise SocketUnavailable(f"cannot tell whether {self.path} is in use "
                                        f"({exc.strerror or exc})") from None
        raise SocketUnavailable(f"another kb-mcp process already answers on {self.path}")

    def close(self) -> None:
        """Stop answering and remove the socket (if the name still holds this one)."""
        with self._close_lock:
            if self._closed.is_set():
                return
            self._closed.set()
            self._close()

    def _close(self) -> None:
        if self._dir_fd >= 0:
            # before the listener closes: while it listens, no other server replaces it
            with contextlib.suppress(OSError):
                st = os.stat(SOCKET_NAME, dir_fd=self._dir_fd, follow_symlinks=False)
                if (st.st_dev, st.st_ino) == self._inode:
                    os.unlink(SOCKET_NAME, dir_fd=self._dir_fd)
        if self._sock is not None:
            with contextlib.suppress(OSError):
                self._sock.shutdown(socket.SHUT_RDWR)  # wakes the blocked accept()
            self._sock.close()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=5.0)
        if self._dir_fd >= 0:
            os.close(self._dir_fd)
            self._dir_fd = -1

    # -- answering -------------------------------------------------------------------
    def _accept_loop(self) -> None:
        assert self._sock is not None
        while not self._closed.is_set():
            try:
                conn, _ = self._sock.accept()
            except OSError as exc:
                if self._closed.is_set():
                    return
                log.warning("local search socket: accept failed (%s)", exc.strerror or exc)
                self._closed.wait(0.1)  # e.g. out of file descriptors: do not spin
                continue
            if not self._slots.acquire(blocking=False):
                self._reply_and_close(conn, {"accepted": False, "reason": "busy"})
                continue
            threading.Thread(target=self._answer, args=(conn,), daemon=True,
                             name="kb-mcp-local-search-client").start()

    def _reply_and_close(self, conn: socket.socket, message: dict[str, Any]) -> None:
        with contextlib.suppress(OSError), conn:
            conn.settimeout(1.0)
            conn.sendall(encode_line(message))

    def _answer(self, conn: socket.socket) -> None:
        try:
            with conn:
                conn.settimeout(REQUEST_TIMEOUT_S)
                self._answer_one(conn)
        except (OSError, ValueError, UnicodeError) as exc:
            log.debug("local search: connection dropped (%s)", exc)
        finally:
            self._slots.release()

    def _answer_one(self, conn: socket.socket) -> None:
        pid, uid, _ = peer_credentials(conn)
        if uid != self._uid:
            log.warning("refused a local search from uid %d (pid %d): only uid %d may use %s",
                        uid, pid, self._uid, self.path)
            conn.sendall(encode_line({"accepted": False, "reason": "another user"}))
            return
        with conn.makefile("rb") as lines:
            line = lines.readline(MAX_REQUEST_BYTES)
        if not line:
            return  # a probe: another server checking whether this socket is alive
        request = decode_line(line)
        reason = self._refusal(request)
        if reason is not None:
            conn.sendall(encode_line({"accepted": False, "reason": reason}))
            return
        conn.sendall(encode_line({"accepted": True, "pid": os.getpid()}))
        started = time.perf_counter()
        try:
            response = self._search(request["query"], dict(request["params"]))
        except Exception as exc:  # the client searches itself and reports it its own way
            log.debug("local search failed: %s: %s", type(exc).__name__, exc)
            conn.sendall(encode_line({"ok": False, "error": f"{type(exc).__name__}: {exc}"}))
            return
        seconds = time.perf_counter() - started
        conn.sendall(encode_line({"ok": True, "seconds": seconds, "response": response}))
        log.debug("local search for pid %d answered in %.1f ms", pid, seconds * 1000)

    def _identity_of(self, request: dict[str, Any]) -> str | None:
        """The client's ``settings_identity``: sent, or built here from its inputs (the
        command line's --kb-path and working folder, when it has no config file: none
        named, none in its environment or user config folder, so none but the knowledge
        base's own is looked for here)."""
        inputs = request.get("inputs")
        if not isinstance(inputs, dict):
            identity = request.get("settings")
            return identity if isinstance(identity, str) else None
        from kbmcp_adapters.app.config import build_settings

        try:
            theirs = build_settings(None, cwd=Path(str(inputs["cwd"])), env={},
                                    user_config=False, kb_path=str(inputs["kb_path"]))
        except Exception:  # their command reports a bad configuration its own way
            return None
        return settings_identity(theirs)

    def _refusal(self, request: dict[str, Any]) -> str | None:
        if request.get("protocol") != PROTOCOL:
            return f"protocol {request.get('protocol')!r}, this server speaks {PROTOCOL}"
        if request.get("version") != self._version:
            return f"kb-mcp {request.get('version')}, this server runs {self._version}"
        if self._identity_of(request) != self._identity:
            return "another configuration (index, model or search settings)"
        if not isinstance(request.get("query"), str) or not isinstance(request.get("params"),
                                                                         dict):
            return "malformed request"
        return None


def knowledge_base_search(kb: KnowledgeBase) -> SearchFn:
    """Searches answered by an open knowledge base (``kb-mcp watch``)."""

    def search(query: str, params: dict[str, Any]) -> dict[str, Any]:
        return kb.search(query, **params).as_dict()

    return search


__all__ = ["LocalSearchServer", "SearchFn", "SocketUnavailable", "knowledge_base_search"]
