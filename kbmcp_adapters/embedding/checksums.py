"""Model files checked against their published sha256 before a byte of them is used."""

from __future__ import annotations

import hashlib
import threading
from pathlib import Path

from kbmcp_core.errors import EmbeddingUnavailable, KbError

# Files already found intact in this process (path, expected digest): checked once.
_lock = threading.Lock()
_verified: set[tuple[str, str]] = set()


def read_verified(path: Path, expected: str, what: str, fix: str,
                  error: type[KbError] = EmbeddingUnavailable) -> bytes:
    """The bytes of ``path``, read through one handle and hashed: the bytes returned are
    the bytes checked, so a file swapped after the check cannot slip through. Every
    failure is ``error`` (a reranker's files raise ``RerankerUnavailable``)."""
    data = _read(path, what, fix, error)
    if hashlib.sha256(data).hexdigest() != expected:
        raise error(_damaged(what, fix))
    return data


def verify(path: Path, expected: str, what: str, fix: str,
           error: type[KbError] = EmbeddingUnavailable) -> None:
    """Check a file's sha256 once per process; ``error`` if it differs."""
    if not sha256_matches(path, expected, what, fix, error):
        raise error(_damaged(what, fix))


def sha256_matches(path: Path, expected: str, what: str, fix: str,
                   error: type[KbError] = EmbeddingUnavailable) -> bool:
    """Whether ``path`` hashes to ``expected``; a missing or unreadable file is an error."""
    key = (str(path), expected)
    with _lock:
        if key in _verified:
            return True
    digest = hashlib.sha256()
    try:
        with path.open("rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    except FileNotFoundError:
        raise error(f"{what} is missing; {fix}") from None
    except OSError as exc:
        raise error(f"{what} cannot be read ({exc.strerror}); {fix}") from None
    if digest.hexdigest() != expected:
        return False
    with _lock:
        _verified.add(key)
    return True


def _read(path: Path, what: str, fix: str, error: type[KbError]) -> bytes:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        raise error(f"{what} is missing; {fix}") from None
    except OSError as exc:
        raise error(f"{what} cannot be read ({exc.strerror}); {fix}") from None


def _damaged(what: str, fix: str) -> str:
    return f"{what} does not match its published sha256 (damaged or replaced); {fix}"
