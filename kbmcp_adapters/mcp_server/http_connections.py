"""Connection-level limits of the HTTP server, below ASGI: a deadline for a request's
headers, caps on the connections open at once (per client address and in total), and a
log that repeated lines cannot flood.

uvicorn (0.54) has no header-read timeout, and its ``limit_concurrency`` answers 503 only
once a request's headers have arrived, so a client that opens connections and never
finishes a request holds them (and their file descriptors) for ever. ``guarded_protocol``
is uvicorn's own h11 protocol with those checks added where a connection is made, data
arrives and a response completes. Imported only by ``serve_http`` (it imports uvicorn).
"""

from __future__ import annotations

import asyncio
import logging
import resource
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import replace

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

from kbmcp_adapters.mcp_server.http_limits import HttpLimits
from kbmcp_adapters.mcp_server.ui import SECURITY_HEADERS

log = logging.getLogger(__name__)

#: File descriptors kept free for everything but client connections (index, model, logs).
FD_RESERVE = 128


def within_fd_limit(limits: HttpLimits) -> HttpLimits:
    """``limits`` with the total lowered to what the open-file limit leaves room for."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY or soft - FD_RESERVE >= limits.max_connections:
        return limits
    room = max(8, soft - FD_RESERVE)
    log.warning("the open-file limit (ulimit -n %d) leaves room for %d connections, not %d: "
                "serving at most %d at once", soft, room, limits.max_connections, room)
    return replace(limits, max_connections=room,
                   max_connections_per_client=min(limits.max_connections_per_client, room))


class ConnectionCounts:
    """Connections open right now, in total and per client address (one event loop)."""

    def __init__(self) -> None:
        self.total = 0
        self.by_client: Counter[str] = Counter()

    def admit(self, client: str, limits: HttpLimits) -> str | None:
        """Count a new connection, or say why it may not be opened."""
        if self.total >= limits.max_connections:
            return f"{self.total} connections are open (--max-connections)"
        if self.by_client[client] >= limits.max_connections_per_client:
            return (f"this client has {self.by_client[client]} connections open "
                    "(--max-connections-per-client)")
        self.total += 1
        self.by_client[client] += 1
        return None

    def release(self, client: str) -> None:
        self.total -= 1
        self.by_client[client] -= 1
        if self.by_client[client] <= 0:
            del self.by_client[client]


def _raw_response(status: int, reason: str, body: str, extra: dict[str, str]) -> bytes:
    """A whole HTTP/1.1 response for a connection that never reached the application."""
    payload = body.encode()
    headers = {"Content-Type": "application/json", "Content-Length": str(len(payload)),
               "Connection": "close", **extra, **SECURITY_HEADERS}
    head = "".join(f"{k}: {v}\r\n" for k, v in headers.items())
    return f"HTTP/1.1 {status} {reason}\r\n{head}\r\n".encode("latin-1") + payload


TOO_MANY = _raw_response(503, "Service Unavailable", '{"error": "too many connections"}',
                         {"Retry-After": "1"})
HEADERS_TOO_SLOW = _raw_response(408, "Request Timeout",
                                 '{"error": "request headers not received in time"}', {})


def guarded_protocol(limits: HttpLimits,
                     counts: ConnectionCounts | None = None) -> type[H11Protocol]:
    """uvicorn's h11 protocol class with ``limits`` applied (pass it as ``http=``)."""
    shared = counts or ConnectionCounts()

    class GuardedH11Protocol(H11Protocol):
        _counted: str | None = None
        _header_timer: asyncio.TimerHandle | None = None

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            client = self.client[0] if self.client else ""
            refused = shared.admit(client, limits)
            if refused is not None:
                log.warning("refused a connection: %s; answered 503", refused)
                transport.write(TOO_MANY)
                transport.close()
                return
            self._counted = client
            self._arm()

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            if self._counted is not None:
                shared.release(self._counted)
                self._counted = None
            super().connection_lost(exc)

        def data_received(self, data: bytes) -> None:
            super().data_received(data)
            if self.conn.their_state is h11.IDLE:
                self._arm()  # a request begun: its deadline runs from its first byte
            else:
                self._disarm()

        def on_response_complete(self) -> None:
            self._disarm()  # until the next request begins, uvicorn's keep-alive applies
            super().on_response_complete()

        def send_400_response(self, msg: str) -> None:
            """uvicorn's 400 for a malformed request, with the security headers."""
            event = h11.Response(status_code=400, reason=b"Bad Request", headers=[
                (b"content-type", b"text/plain; charset=utf-8"), (b"connection", b"close"),
                *((k.encode(), v.encode()) for k, v in SECURITY_HEADERS.items())])
            self.transport.write(self.conn.send(event) or b"")
            self.transport.write(self.conn.send(h11.Data(data=msg.encode("ascii"))) or b"")
            self.transport.write(self.conn.send(h11.EndOfMessage()) or b"")
            self.transport.close()

        def _arm(self) -> None:
            if self._header_timer is None and not self.transport.is_closing():
                self._header_timer = self.loop.call_later(limits.header_timeout_s,
                                                          self._headers_too_slow)

        def _disarm(self) -> None:
            if self._header_timer is not None:
                self._header_timer.cancel()
                self._header_timer = None

        def _headers_too_slow(self) -> None:
            self._header_timer = None
            if self.transport.is_closing() or self.conn.their_state is not h11.IDLE:
                return
            log.warning("closed a connection whose request headers did not arrive within "
                        "%gs (--header-timeout); answered 408", limits.header_timeout_s)
            self.transport.write(HEADERS_TOO_SLOW)
            self.transport.close()

    return GuardedH11Protocol


class RepeatFilter(logging.Filter):
    """Lets at most ``burst`` records of one kind (logger, level, message template)
    through per ``window`` seconds; the first one after a window says how many were
    left out. A flood of identical warnings or tracebacks costs a few lines a minute."""

    def __init__(self, burst: int = 5, window_s: float = 60.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__()
        self.burst = burst
        self.window_s = window_s
        self.clock = clock
        self._lock = threading.Lock()
        #: kind -> [window start, records seen in it, records left out of it]
        self._kinds: dict[tuple[str, int, str], list[float]] = {}

    def filter(self, record: logging.LogRecord) -> bool:
        kind = (record.name, record.levelno, str(record.msg))
        now = self.clock()
        with self._lock:
            seen = self._kinds.get(kind)
            if seen is None or now - seen[0] >= self.window_s:
                left_out = int(seen[2]) if seen is not None else 0
                if len(self._kinds) > 1000:  # bounded, whatever the variety of messages
                    self._kinds.clear()
                self._kinds[kind] = [now, 1, 0]
                if left_out:
                    record.msg = (f"{record.getMessage()} ({left_out} more like this in "
                                  f"{self.window_s:g}s were not logged)")
                    record.args = None
                return True
            seen[1] += 1
            if seen[1] <= self.burst:
                return True
            seen[2] += 1
            return False


def install_repeat_filter(logger: logging.Logger | None = None) -> RepeatFilter:
    """One ``RepeatFilter`` on every handler of ``logger`` (the root logger)."""
    target = logger or logging.getLogger()
    found = next((f for h in target.handlers for f in h.filters if isinstance(f, RepeatFilter)),
                 None)
    flt = found or RepeatFilter()
    for handler in target.handlers:
        if flt not in handler.filters:
            handler.addFilter(flt)
    return flt


__all__ = ["ConnectionCounts", "RepeatFilter", "guarded_protocol", "install_repeat_filter",
           "within_fd_limit"]
