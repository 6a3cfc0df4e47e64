"""A TCP relay from a loopback port to the session's PostgreSQL cluster: cutting it is a
database outage for whoever connects through it, while the cluster, shared by the whole
session, keeps running. ``relay`` is the fixture (stopped at the end of its test)."""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Iterator

from tests.pg_cluster import PgCluster

#: Every relay thread ends within this many seconds of ``cut``.
DEADLINE = 30.0


class Relay:
    """A TCP relay from a loopback port to the cluster. ``cut()`` is the outage: every
    relayed connection is closed and the port stops listening, so a new connection is
    refused (the cluster itself, shared by the session, keeps running)."""

    def __init__(self, upstream_port: int) -> None:
        self._upstream = upstream_port
        self._lock = threading.Lock()
        self._sockets: list[socket.socket] = []
        self._threads: list[threading.Thread] = []
        self._listen(0)

    def _listen(self, port: int) -> None:
        self._listener = socket.create_server(("127.0.0.1", port))  # SO_REUSEADDR
        self.port = int(self._listener.getsockname()[1])
        accepting = threading.Thread(target=self._accept, args=(self._listener,), daemon=True)
        self._threads.append(accepting)
        accepting.start()

    def restore(self) -> None:
        """The database is back, at the same address."""
        self._listen(self.port)

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return
            upstream = socket.create_connection(("127.0.0.1", self._upstream), timeout=10)
            upstream.settimeout(None)
            with self._lock:
                self._sockets += [client, upstream]
                for source, sink in ((client, upstream), (upstream, client)):
                    pump = threading.Thread(target=_pump, args=(source, sink), daemon=True)
                    self._threads.append(pump)
                    pump.start()

    def cut(self) -> None:
        with contextlib.suppress(OSError):
            self._listener.shutdown(socket.SHUT_RDWR)  # wakes the blocked accept()
        self._listener.close()
        with self._lock:
            for sock in self._sockets:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
                sock.close()
            threads, self._threads, self._sockets = self._threads, [], []
        for thread in threads:
            thread.join(DEADLINE)
            assert not thread.is_alive(), "a relay thread did not stop"


def _pump(source: socket.socket, sink: socket.socket) -> None:
    try:
        while data := source.recv(65536):
            sink.sendall(data)
    except OSError:
        pass
    finally:
        with contextlib.suppress(OSError):
            sink.shutdown(socket.SHUT_WR)


@contextlib.contextmanager
def relay_to(cluster: PgCluster) -> Iterator[Relay]:
    """A relay to ``cluster`` for the length of the ``with`` block (a test's fixture)."""
    relayed = Relay(cluster.port)
    try:
        yield relayed
    finally:
        relayed.cut()
