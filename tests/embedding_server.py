"""An OpenAI-compatible embedding service on loopback, for the tests and the benchmarks.

``POST /v1/embeddings`` answers with REAL vectors of the packaged default model (the
embedder it is given), so an index built through it can be measured, not just plumbed.
Faults are switched on per test: scripted statuses (429 with ``Retry-After``, 500, 503), a
delay beyond the client's timeout, vectors of the wrong dimension, 413 on batches over a
size, 400 for any text holding a marker, and a required bearer key. Every request is
recorded (time, model, inputs, whether the key matched). Started and stopped by the test
(``with EmbeddingServer(embedder) as server:``), on a port of its own.
"""

from __future__ import annotations

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
        with self._lock:
            self.seen.append(Seen(time.monotonic(), model, inputs, authorized))
        data = [{"object": "embedding", "index": i, "embedding": v}
                for i, v in enumerate(vectors)]
        payload = {"object": "list", "data": data, "model": model,
                   "usage": {"prompt_tokens": 0, "total_tokens": 0}}
        return 200, {}, json.dumps(payload).encode("utf-8")

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

        def do_POST(self) -> None:  # noqa: N802 (http.server's name)
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length)
            if self.path.rstrip("/") != "/v1/embeddings":
                status, headers, payload = _error(404, "no such route")
            else:
                status, headers, payload = server.answer(self.headers, body)
            try:
                self.send_response(status)
                for name, value in {"Content-Type": "application/json", **headers}.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)
            except (BrokenPipeError, ConnectionResetError):  # the client gave up (timeout)
                pass

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
            return  # quiet: pytest's output is for failures

    return Handler


__all__ = ["EmbeddingServer", "Seen"]
