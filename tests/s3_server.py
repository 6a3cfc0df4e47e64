"""An S3-compatible server for the tests: moto's standalone server on loopback.

``s3_server`` (session) is one running server; ``S3Server.start()`` starts a private one a
test may stop (the server-gone faults). Each ``new_bucket()`` is a fresh bucket, created
with a plain ``PUT``. The credentials are fake and recognisable (``FAKE_SECRET``) so that
tests can look for them where they must never appear. moto keeps its buckets in this
process's memory: every server started here sees the same buckets.
"""

from __future__ import annotations

import logging
import urllib.request
import uuid
from collections.abc import Iterator

import pytest

__all__ = ["FAKE_KEY_ID", "FAKE_SECRET", "S3Server"]

FAKE_KEY_ID = "KBTESTKEYID0000000000"
FAKE_SECRET = "kbtest-SECRET-do-not-print-7d1f93"
REGION = "us-east-1"


class S3Server:
    """One moto server on 127.0.0.1 (a free port), stopped by ``stop()``."""

    def __init__(self) -> None:
        from moto.server import ThreadedMotoServer

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
