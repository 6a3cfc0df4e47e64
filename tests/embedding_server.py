"""An OpenAI-compatible embedding service on loopback, for the tests and the benchmarks.

``POST /v1/embeddings`` answers with REAL vectors of the packaged default model (the
embedder it is given), so an index built through it can be measured, not just plumbed.
Faults are switched on per test: scripted statuses (429 with ``Retry-After``, 500, 503), a
delay beyond the client's timeout, vectors of the wrong dimension, 413 on batches over a
size, 400 for any text holding a marker, and a required bearer key; and the hostile ones
(issue 37): a redirect to another address, an answer trickled one byte at a time, an answer
padded with megabytes of whitespace (with a length, or chunked), vectors far longer than
asked, and JSON nested thousands deep. Every request is recorded (time, model, inputs,
whether the key matched), and how many are being answered at once. Started and stopped by
the test (``with EmbeddingServer(embedder) as server:``), on a port of its own.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from kbmcp_core.ports import Embedder


@dataclass(frozen=True, slots=True)
class Seen:
    """One request the service received."""

    at: float
    model: str
    inputs: tuple[str, ...]
    #: the Authorization header was the expected bearer key (True when none is expected)
    authorized: bool


class EmbeddingServer:
    """The service; its attributes are the faults, changeable while it runs."""

    def __init__(self, embedder: Embedder, *, key: str | None = None) -> None:
        self.embedder = embedder
        self.key = key
        #: statuses to answer next, one per request: (status, Retry-After or None)
        self.script: deque[tuple[int, str | None]] = deque()
        #: every request answers this status (503: a service that stays down) when set
        self.always: int | None = None
        self.delay_s = 0.0
        #: vectors cut to this many numbers (a wrong dimension)
        self.cut_to: int | None = None
        #: 413 for a request with more inputs than this
        self.max_batch: int | None = None
        #: 400 for a request any of whose inputs holds this marker
        self.refuse: str | None = None
        #: every request answered with this redirect: (status, Location)
        self.redirect: tuple[int, str] | None = None
        #: the whole answer (status line too) sent one byte at a time, this far apart; the
        #: connection is closed when the answer is cut short (``release``)
        self.trickle_s: float | None = None
        #: this many bytes of whitespace before the answer's JSON (sent in pieces)
        self.pad_bytes = 0
        #: the answer sent chunked, with no Content-Length
        self.chunked = False
        #: only the answer's first bytes sent (``raw[:truncate_to]`` of the whole answer,
        #: status line and headers too), then the connection closed
        self.truncate_to: int | None = None
        #: vectors stretched to this many numbers (zeros added)
        self.stretch_to: int | None = None
        #: the answer is arrays nested this deep instead of vectors
        self.nest_depth: int | None = None
        #: answers being sent right now, and the most at once
        self.open_now = 0
        self.most_open = 0
        #: the bytes of the last answer's body the client took before it went away
        self.sent_bytes = 0
        #: (method, Authorization header) of every request, whatever its method and route
        self.heard: list[tuple[str, str | None]] = []
        self.seen: list[Seen] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever,
                                        kwargs={"poll_interval": 0.05}, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def release(self) -> None:
        """Cut every delayed or trickled answer short, now and from now on."""
        self._stop.set()

    def fail(self, status: int, times: int = 1, retry_after: str | None = None) -> None:
        for _ in range(times):
            self.script.append((status, retry_after))

    def embedded(self) -> list[Seen]:
        """The requests that were answered with vectors."""
        with self._lock:
            return [s for s in self.seen if s.model != "<refused>"]

    def __enter__(self) -> EmbeddingServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._stop.set()  # cuts a delayed answer short
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=10)
        assert not self._thread.is_alive(), "the embedding test server did not stop"

    # -- one request -------------------------------------------------------------------------
    def answer(self, headers: Any, body: bytes) -> tuple[int, dict[str, str], bytes]:
        try:
            request = json.loads(body)
            model = str(request["model"])
            raw = request["input"]
            inputs = (raw,) if isinstance(raw, str) else tuple(str(t) for t in raw)
        except (ValueError, KeyError, TypeError):
            return _error(400, "not an embeddings request")
        authorized = self.key is None or headers.get("Authorization") == f"Bearer {self.key}"
        with self._lock:
            scripted = self.script.popleft() if self.script else None
        if self.delay_s:
            self._stop.wait(self.delay_s)
        if self.redirect is not None:
            status, location = self.redirect
            return self._record(model, inputs, authorized,
                                _error(status, "moved", {"Location": location}))
        if not authorized:
            return self._record(model, inputs, False, _error(401, "invalid api key"))
        if scripted is not None or self.always is not None:
            status, retry_after = scripted or (self.always or 503, None)
            extra = {"Retry-After": retry_after} if retry_after is not None else {}
            return self._record(model, inputs, True, _error(status, "busy", extra))
        if self.max_batch is not None and len(inputs) > self.max_batch:
            return self._record(model, inputs, True, _error(413, "batch too large"))
        if self.refuse is not None and any(self.refuse in t for t in inputs):
            return self._record(model, inputs, True, _error(400, "input rejected"))
        vectors = self.embedder.embed_documents(list(inputs))
        if self.cut_to is not None:
            vectors = [v[: self.cut_to] for v in vectors]
        if self.stretch_to is not None:
            vectors = [[*v, *[0.0] * (self.stretch_to - len(v))] for v in vectors]
        with self._lock:
            self.seen.append(Seen(time.monotonic(), model, inputs, authorized))
        if self.nest_depth is not None:
            return 200, {}, b"[" * self.nest_depth + b"]" * self.nest_depth
        data = [{"object": "embedding", "index": i, "embedding": v}
                for i, v in enumerate(vectors)]
        payload = {"object": "list", "data": data, "model": model,
                   "usage": {"prompt_tokens": 0, "total_tokens": 0}}
        return 200, {}, json.dumps(payload).encode("utf-8")

    def reply(self, handler: BaseHTTPRequestHandler, status: int, headers: dict[str, str],
              payload: bytes) -> None:
        """Send one answer as the server's faults say (trickled, padded, chunked),
        counted in ``open_now`` while it is sent."""
        with self._lock:
            self.open_now += 1
            self.most_open = max(self.most_open, self.open_now)
        try:
            self._send(handler, status, headers, payload)
        finally:
            with self._lock:
                self.open_now -= 1

    def _send(self, handler: BaseHTTPRequestHandler, status: int, headers: dict[str, str],
              payload: bytes) -> None:
        head = {"Content-Type": "application/json", **headers}
        pad = self.pad_bytes if 200 <= status < 300 else 0
        if self.chunked:
            head["Transfer-Encoding"] = "chunked"
        else:
            head["Content-Length"] = str(pad + len(payload))
        interval = self.trickle_s
        if interval is not None or self.truncate_to is not None:
            raw = (f"HTTP/1.1 {status} X\r\n" + "".join(f"{k}: {v}\r\n" for k, v in head.items())
                   + "\r\n").encode("latin-1") + payload
            raw = raw[: self.truncate_to]
            handler.close_connection = True
            if interval is None:
                handler.wfile.write(raw)
                self.sent_bytes = len(raw)
                return
            for i in range(len(raw)):
                if self._stop.wait(interval):
                    return
                handler.wfile.write(raw[i:i + 1])
                handler.wfile.flush()
                self.sent_bytes = i + 1
            return
        handler.send_response(status)
        for name, value in head.items():
            handler.send_header(name, value)
        handler.end_headers()
        self.sent_bytes = 0
        piece = b" " * 65536
        while pad > 0 and not self._stop.is_set():
            part = piece[:pad]
            handler.wfile.write(b"%x\r\n%s\r\n" % (len(part), part) if self.chunked else part)
            self.sent_bytes += len(part)
            pad -= len(part)
        if self.chunked:
            handler.wfile.write(b"%x\r\n%s\r\n0\r\n\r\n" % (len(payload), payload))
        else:
            handler.wfile.write(payload)
        self.sent_bytes += len(payload)

    def _record(self, model: str, inputs: Sequence[str], authorized: bool,
                reply: tuple[int, dict[str, str], bytes]) -> tuple[int, dict[str, str], bytes]:
        with self._lock:
            self.seen.append(Seen(time.monotonic(), "<refused>", tuple(inputs), authorized))
        return reply


def _error(status: int, message: str, headers: dict[str, str] | None = None
           ) -> tuple[int, dict[str, str], bytes]:
    body = json.dumps({"error": {"message": message, "type": "test", "code": status}})
    return status, headers or {}, body.encode("utf-8")


def _handler(server: EmbeddingServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:  # noqa: N802 (http.server's name)
            server.heard.append(("GET", self.headers.get("Authorization")))
            self.close_connection = True
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                server.reply(self, *_error(405, "POST only"))

        def do_POST(self) -> None:  # noqa: N802 (http.server's name)
            server.heard.append(("POST", self.headers.get("Authorization")))
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length)
            if self.path.rstrip("/") != "/v1/embeddings":
                status, headers, payload = _error(404, "no such route")
            else:
                status, headers, payload = server.answer(self.headers, body)
            try:
                server.reply(self, status, headers, payload)
            except (BrokenPipeError, ConnectionResetError):  # the client gave up (timeout)
                self.close_connection = True

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
            return  # quiet: pytest's output is for failures

    return Handler


__all__ = ["EmbeddingServer", "Seen"]
