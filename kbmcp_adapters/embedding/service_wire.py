"""One HTTP exchange with an embedding service: one deadline, a cap on the bytes, no redirect.

``http.client`` alone (decision 0037): no redirect handling and no proxy, so the request,
and the ``Authorization`` header with it, goes to the configured origin and nowhere else;
a 30x comes back as an answer like any other for the caller to refuse. Every read from the
socket (status line, headers, body) and the send look at the one deadline of the exchange,
so a service that trickles its answer a byte at a time cannot outlast it. The body is read
in pieces counted against a cap, so an answer padded to hundreds of megabytes is refused
before it is held in memory.
"""

from __future__ import annotations

import http.client
import io
import socket
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

#: The most bytes read from the socket at once.
_PIECE = 64 * 1024
#: The most bytes of an answer that is not a success read (its error text).
ERROR_BYTES = 4096


class AnswerTooLarge(Exception):
    """The answer's body is longer than the cap (declared or as read)."""

    def __init__(self, cap: int) -> None:
        super().__init__(f"more than {cap:,} bytes")
        self.cap = cap


@dataclass(frozen=True, slots=True)
class Answer:
    """A status, its headers and at most ``cap`` bytes of body."""

    status: int
    headers: http.client.HTTPMessage
    body: bytes


def exchange(url: str, body: bytes | None, headers: Mapping[str, str], *, deadline: float,
             cap: int, method: str = "POST") -> Answer:
    """``method url`` (``POST`` with ``body`` by default; ``GET`` with ``None``) and its
    answer, all of it before ``deadline`` (``time.monotonic``).

    Raises ``TimeoutError`` past the deadline, ``AnswerTooLarge`` for a 2xx body over
    ``cap`` bytes (other statuses keep their first ``ERROR_BYTES``), ``IncompleteRead`` for a
    2xx body cut short of its ``Content-Length``, and what ``http.client`` raises otherwise
    (``OSError``, ``http.client.HTTPException``)."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    connection: _Plain | _Tls = (
        _Tls(host, parts.port, deadline) if parts.scheme == "https"
        else _Plain(host, parts.port, deadline))
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    try:
        connection.request(method, target, body=body, headers=dict(headers))
        response = connection.getresponse()
        if connection.guard is not None and connection.guard.ended:
            # http.client takes a header block cut by the end of the connection as whole
            raise http.client.IncompleteRead(b"")
        ok = 200 <= response.status < 300
        declared = _declared(response)
        if ok and declared > cap:
            raise AnswerTooLarge(cap)
        data = _read(response, cap if ok else min(cap, ERROR_BYTES), strict=ok)
        if ok and len(data) < declared:  # the connection ended early: not an answer
            raise http.client.IncompleteRead(data, declared - len(data))
        return Answer(response.status, response.msg, data)
    finally:
        connection.close()


def _left(deadline: float) -> float:
    left = deadline - time.monotonic()
    if left <= 0:
        raise TimeoutError("the deadline passed")
    return left


def _declared(response: http.client.HTTPResponse) -> int:
    value = (response.getheader("Content-Length") or "").strip()
    return int(value) if value.isdigit() else 0


def _read(response: http.client.HTTPResponse, cap: int, *, strict: bool) -> bytes:
    """The body in pieces: past ``cap`` bytes, ``AnswerTooLarge`` when ``strict``, else the
    first ``cap`` bytes (an error text needs no more)."""
    pieces: list[bytes] = []
    total = 0
    while True:
        piece = response.read(_PIECE)
        if not piece:
            return b"".join(pieces)
        total += len(piece)
        if total > cap:
            if strict:
                raise AnswerTooLarge(cap)
            pieces.append(piece[: cap - (total - len(piece))])
            return b"".join(pieces)
        pieces.append(piece)


class _DeadlineReader(io.RawIOBase):
    """The socket as ``HTTPResponse`` reads it: each read waits at most until the deadline."""

    def __init__(self, sock: socket.socket, deadline: float) -> None:
        super().__init__()
        self._sock = sock
        self._raw = sock.makefile("rb", buffering=0)  # keeps the socket open while read
        self._deadline = deadline
        #: the connection ended while a read still wanted bytes
        self.ended = False

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int | None:
        self._sock.settimeout(_left(self._deadline))
        got = self._raw.readinto(buffer)
        self.ended = self.ended or got == 0
        return got

    def close(self) -> None:
        self._raw.close()
        super().close()


class _Guarded:
    """A connected socket whose sends and reads share the exchange's deadline."""

    def __init__(self, sock: socket.socket, deadline: float) -> None:
        self._sock = sock
        self._deadline = deadline
        self._readers: list[_DeadlineReader] = []

    @property
    def ended(self) -> bool:
        """The connection ended while a read still wanted bytes."""
        return any(reader.ended for reader in self._readers)

    def sendall(self, data: Any) -> None:
        self._sock.settimeout(_left(self._deadline))
        self._sock.sendall(data)

    def makefile(self, mode: str) -> io.BufferedReader:
        assert mode == "rb", mode
        reader = _DeadlineReader(self._sock, self._deadline)
        self._readers.append(reader)
        return io.BufferedReader(reader)

    def close(self) -> None:
        self._sock.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._sock, name)


class _OnDeadline(http.client.HTTPConnection):
    """A connection whose socket, once open, answers every read by the request's one
    deadline (``_Guarded``)."""

    def __init__(self, host: str, port: int | None, deadline: float) -> None:
        super().__init__(host, port, timeout=_left(deadline))
        self.deadline = deadline
        self.guard: _Guarded | None = None

    def connect(self) -> None:
        super().connect()
        self.sock = self.guard = _Guarded(self.sock, self.deadline)


class _Plain(_OnDeadline):
    pass


class _Tls(_OnDeadline, http.client.HTTPSConnection):
    pass


__all__ = ["ERROR_BYTES", "Answer", "AnswerTooLarge", "exchange"]
