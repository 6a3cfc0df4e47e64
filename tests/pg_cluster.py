"""A throwaway PostgreSQL cluster for the tests: initdb into a temp folder, loopback only.

``initdb`` and ``postgres`` refuse to run as root, so under root (CI's containers) both run
as the unprivileged ``nobody`` through ``setpriv``. The cluster trusts loopback connections
of its one user and is stopped (``pg_ctl stop -m immediate``) and deleted at the end.

Every database a test makes (``new_database``, directly or through ``pg_url``) is dropped
once the test and its fixtures are torn down (``pytest_runtest_teardown`` below): a run
makes hundreds of them, about 300 files each, and a cluster left holding them all took 23 s
to delete at the end of a worker's session (32,000 files, on this machine's disk).

When PostgreSQL cannot start, tests that need it are skipped on a developer machine, but
fail under ``CI=true``: CI must never pass by skipping the PostgreSQL half of the suite.
"""

from __future__ import annotations

import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

__all__ = ["PgCluster", "pg_unavailable", "start_cluster"]

USER = "kbtest"
START_TIMEOUT_S = 60.0
_BIN_DIRS = ("/usr/lib/postgresql/15/bin", "/usr/local/bin", "/usr/bin")


def _binary(name: str) -> str | None:
    for folder in _BIN_DIRS:
        candidate = Path(folder) / name
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    return shutil.which(name)


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class PgCluster:
    """One running cluster: ``url(db)`` for SQLAlchemy, ``new_database()`` per test."""

    def __init__(self, root: Path, port: int, run_as: list[str]) -> None:
        self.root = root
        self.data = root / "data"
        self.port = port
        self._run_as = run_as
        #: databases made since the last ``drop_made``: the running test's
        self._made: list[str] = []

    def url(self, database: str = "postgres", driver: str = "postgresql+psycopg") -> str:
        return f"{driver}://{USER}@127.0.0.1:{self.port}/{database}"

    def connect(self, database: str = "postgres") -> object:
        import psycopg

        return psycopg.connect(
            host="127.0.0.1", port=self.port, user=USER, dbname=database, autocommit=True
        )

    def new_database(self, prefix: str = "kb") -> str:
        """A fresh, empty database; returns its SQLAlchemy URL."""
        name = f"{prefix}_{uuid.uuid4().hex[:12]}"
        with self.connect() as conn:  # type: ignore[attr-defined]
            conn.execute(f'CREATE DATABASE "{name}"')
        self._made.append(name)
        return self.url(name)

    def drop_made(self) -> None:
        """Drop every database made since the last call (their connections ended); a failure
        leaves one to the cluster's own deletion at the end."""
        made, self._made = self._made, []
        if not made:
            return
        try:
            with self.connect() as conn:  # type: ignore[attr-defined]
                for name in made:
                    conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        except Exception:  # noqa: BLE001 (the session's end deletes the files anyway)
            pass

    def stop(self) -> None:
        pg_ctl = _binary("pg_ctl")
        if pg_ctl and (self.data / "postmaster.pid").exists():
            subprocess.run(
                [*self._run_as, pg_ctl, "-D", str(self.data), "-m", "immediate", "-w",
                 "-t", "30", "stop"],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=60, check=False,
            )
        shutil.rmtree(self.root, ignore_errors=True)


def pg_unavailable() -> str | None:
    """Why no cluster can be started here, or None."""
    missing = [b for b in ("initdb", "pg_ctl", "postgres") if _binary(b) is None]
    if missing:
        return f"PostgreSQL binaries not found: {', '.join(missing)}"
    if os.geteuid() == 0 and shutil.which("setpriv") is None:
        return "running as root and setpriv is missing (initdb refuses root)"
    return None


def start_cluster() -> PgCluster:
    """initdb + start; raises RuntimeError with the server's log on failure."""
    reason = pg_unavailable()
    if reason:
        raise RuntimeError(reason)
    root = Path(tempfile.mkdtemp(prefix="kbmcp-pg-"))
    run_as: list[str] = []
    if os.geteuid() == 0:
        nobody = pwd.getpwnam("nobody")
        run_as = [shutil.which("setpriv") or "setpriv", f"--reuid={nobody.pw_uid}",
                  f"--regid={nobody.pw_gid}", "--clear-groups"]
        os.chmod(root, 0o755)
        os.chown(root, nobody.pw_uid, nobody.pw_gid)
    cluster = PgCluster(root, _free_port(), run_as)
    env = {**os.environ, "LC_ALL": "C.UTF-8", "LANG": "C.UTF-8", "TZ": "UTC"}
    log = root / "server.log"
    try:
        subprocess.run(
            [*run_as, _binary("initdb") or "initdb", "-D", str(cluster.data), "-U", USER,
             "--auth=trust", "-E", "UTF8", "--locale=C.UTF-8", "--no-sync"],
            env=env, capture_output=True, text=True, timeout=120, check=True,
        )
        options = (f"-c listen_addresses=127.0.0.1 -p {cluster.port} "
                   f"-c unix_socket_directories='{root}' -c fsync=off "
                   "-c synchronous_commit=off -c full_page_writes=off -c max_connections=200")
        subprocess.run(
            [*run_as, _binary("pg_ctl") or "pg_ctl", "-D", str(cluster.data), "-l", str(log),
             "-o", options, "-w", "-t", str(int(START_TIMEOUT_S)), "start"],
            env=env, capture_output=True, text=True, timeout=START_TIMEOUT_S + 30, check=True,
        )
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            try:
                with cluster.connect() as conn:  # type: ignore[attr-defined]
                    conn.execute("SELECT 1")
                break
            except Exception:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
    except (subprocess.SubprocessError, OSError, Exception) as exc:
        detail = getattr(exc, "stderr", "") or ""
        server_log = log.read_text(errors="replace")[-2000:] if log.exists() else ""
        cluster.stop()
        raise RuntimeError(f"PostgreSQL did not start: {exc}\n{detail}\n{server_log}") from exc
    return cluster


@pytest.fixture(scope="session")
def pg_cluster() -> Iterator[PgCluster]:
    """The session's cluster; skipped without PostgreSQL, a failure under CI=true."""
    try:
        cluster = start_cluster()
    except RuntimeError as exc:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"CI=true and PostgreSQL could not start: {exc}")
        pytest.skip(f"PostgreSQL not available: {exc}")
    _RUNNING.append(cluster)
    try:
        yield cluster
    finally:
        _RUNNING.remove(cluster)
        cluster.stop()


#: the session's cluster once a test has asked for it (one per xdist worker)
_RUNNING: list[PgCluster] = []


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item: pytest.Item) -> Iterator[None]:
    """After a test's own fixtures are torn down (its stores closed), drop the databases it
    made: no fixture holding one outlives its test."""
    yield
    for cluster in _RUNNING:
        cluster.drop_made()


@pytest.fixture
def pg_url(pg_cluster: PgCluster) -> str:
    """A fresh database on the session's cluster (SQLAlchemy URL, psycopg 3 driver),
    dropped after the test."""
    return pg_cluster.new_database()
