"""An S3-compatible server for the tests: moto's standalone server on loopback.

``s3_server`` (session) is one running server; ``S3Server.start()`` starts a private one a
test may stop (the server-gone faults). Each ``new_bucket()`` is a fresh bucket, created
with a plain ``PUT``. The credentials are fake and recognisable (``FAKE_SECRET``) so that
tests can look for them where they must never appear. moto keeps its buckets in this
process's memory: every server started here sees the same buckets.
"""

from __future__ import annotations

import logging
import threading
import urllib.request
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

__all__ = ["FAKE_KEY_ID", "FAKE_SECRET", "S3Server"]

FAKE_KEY_ID = "KBTESTKEYID0000000000"
FAKE_SECRET = "kbtest-SECRET-do-not-print-7d1f93"
REGION = "us-east-1"


class _Window:
    """A stored object's bytes, read from moto's buffer only where a range asks.

    moto answers a ranged ``GET`` by copying the whole object and slicing the copy: a
    1.5 GB data file read 64 KB at a time cost a 1.5 GB copy per read (index training on
    the million-chunk benchmark never finished). This window has the length and slicing
    moto's range handling uses, and copies only the bytes asked for.
    """

    def __init__(self, key: Any) -> None:
        self._key = key

    def __len__(self) -> int:
        return int(self._key.size)

    def __bool__(self) -> bool:
        return len(self) > 0

    def __getitem__(self, cut: slice) -> bytes:
        start, stop, _ = cut.indices(len(self))
        with self._key.lock:
            self._key._value_buffer.seek(start)
            return bytes(self._key._value_buffer.read(max(0, stop - start)))


_ranged = threading.local()
_patch_lock = threading.Lock()


def _serve_ranges_without_copies() -> None:
    """Patch moto (once) so a single-range ``GET`` reads only its range."""
    from moto.s3.models import FakeKey
    from moto.s3.responses import S3Response

    with _patch_lock:
        if getattr(S3Response, "_kb_ranged", False):
            return
        whole: property = FakeKey.__dict__["value"]
        read_all: Any = whole.fget

        def value(key: Any) -> Any:
            if getattr(_ranged, "on", False):
                return _Window(key)
            return read_all(key)

        FakeKey.value = property(value, whole.fset)  # type: ignore[assignment]
        answer = S3Response.key_response

        def key_response(self: Any, request: Any, full_url: str, headers: Any) -> Any:
            spec = request.headers.get("range") or ""
            _ranged.on = request.method == "GET" and spec.count("=") == 1 and "," not in spec
            try:
                status, out_headers, body = answer(self, request, full_url, headers)
            finally:
                _ranged.on = False
            if isinstance(body, _Window):  # a range moto chose to answer whole
                body = body[:]
            return status, out_headers, body

        S3Response.key_response = key_response  # type: ignore[method-assign]
        S3Response._kb_ranged = True  # type: ignore[attr-defined]


class S3Server:
    """One moto server on 127.0.0.1 (a free port), stopped by ``stop()``."""

    def __init__(self) -> None:
        from moto.server import ThreadedMotoServer

        _serve_ranges_without_copies()

        # one line per request from werkzeug would drown the test output
        logging.getLogger("werkzeug").setLevel(logging.ERROR)
        self._server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
        self._server.start()
        host, port = self._server.get_host_and_port()
        self.endpoint = f"http://{host}:{port}"
        self.running = True

    @classmethod
    def start(cls) -> S3Server:
        return cls()

    def stop(self) -> None:
        if self.running:
            self._server.stop()
            self.running = False

    def new_bucket(self) -> str:
        name = f"kb-{uuid.uuid4().hex[:16]}"
        request = urllib.request.Request(f"{self.endpoint}/{name}", method="PUT")
        with urllib.request.urlopen(request, timeout=10) as answer:
            assert answer.status == 200, answer.status
        return name

    def storage_options(self) -> dict[str, str]:
        """What LanceDB needs to reach this server, as a user would configure it."""
        return {
            "aws_access_key_id": FAKE_KEY_ID,
            "aws_secret_access_key": FAKE_SECRET,
            "aws_endpoint": self.endpoint,
            "aws_region": REGION,
            "allow_http": "true",
        }

    def environment(self) -> dict[str, str]:
        """The same settings as ``AWS_*`` environment variables."""
        return {
            "AWS_ACCESS_KEY_ID": FAKE_KEY_ID,
            "AWS_SECRET_ACCESS_KEY": FAKE_SECRET,
            "AWS_ENDPOINT": self.endpoint,
            "AWS_REGION": REGION,
            "AWS_ALLOW_HTTP": "true",
        }


@pytest.fixture(scope="session")
def s3_server() -> Iterator[S3Server]:
    server = S3Server.start()
    try:
        yield server
    finally:
        server.stop()
