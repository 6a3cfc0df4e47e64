"""Bearer tokens for the HTTP transport: created once, stored only as hashes.

A token is ``kbm_`` followed by 32 random bytes from ``secrets`` (URL-safe base64). The
tokens file keeps, per token, a name, its creation time and ``sha256:<hex>`` of the token;
the token itself is printed once and never written anywhere.

Why a plain SHA-256 and not a password hash (bcrypt, scrypt, argon2): those are slow on
purpose, to make guessing a *low-entropy* secret (a password) expensive for someone who
stole the hashes. A kb-mcp token carries 256 bits from the operating system's CSPRNG;
nobody can enumerate that space, slow hash or not. A fast hash is therefore as strong
here, and it lets the server check every request against every stored hash without
spending tens of milliseconds per hash.

The file is written atomically (a new 0600 file beside it, created with ``O_EXCL`` and
``O_NOFOLLOW``, then renamed over it) under an exclusive ``flock`` on ``<file>.lock``, so
two ``kb-mcp token`` commands never lose each other's change, and a server reading the
file sees the old or the new version, never half of one.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import json
import os
import re
import secrets
import stat
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from kbmcp_core.errors import ConfigError

if TYPE_CHECKING:
    from kbmcp_core.settings import Settings

TOKEN_PREFIX = "kbm_"
HASH_PREFIX = "sha256:"
TOKENS_FILE_NAME = "tokens.json"
#: The environment variable holding extra token hashes (comma separated), for containers.
HASHES_ENV = "KB_MCP_TOKEN_HASHES"
#: The most bytes a tokens file may have (some 20 000 tokens): a bigger one is not ours.
MAX_FILE_BYTES = 4 * 1024 * 1024
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
_HEX = re.compile(r"[0-9a-f]{64}")
_FORMAT = 1


@dataclass(frozen=True, slots=True)
class StoredToken:
    """One line of the tokens file: who the token is for, when it was made, its hash."""

    name: str
    created: str
    hash: str

    def as_dict(self) -> dict[str, str]:
        return {"name": self.name, "created": self.created, "hash": self.hash}


def default_tokens_file(settings: Settings) -> Path:
    """``[server].tokens_file`` when the config sets it, else ``tokens.json`` in the
    index folder (what ``serve`` and ``kb-mcp token`` use without ``--tokens-file``)."""
    return settings.server_tokens_file or settings.index_dir / TOKENS_FILE_NAME


def new_token() -> str:
    """A fresh token: the prefix (so a leaked one is recognisable) and 256 random bits."""
    return TOKEN_PREFIX + secrets.token_urlsafe(32)


def token_hash(token: str) -> str:
    """``sha256:<hex>`` of the token (see the module docstring for why SHA-256)."""
    return HASH_PREFIX + hashlib.sha256(token.encode("utf-8")).hexdigest()


def parse_hash(value: str, where: str) -> str:
    """A stored hash in its one spelling, ``sha256:<64 lower-case hex digits>``; a bare
    64-digit hex string is accepted too. ``ConfigError`` for anything else."""
    text = value.strip().lower().removeprefix(HASH_PREFIX)
    if not _HEX.fullmatch(text):
        raise ConfigError(f"{where}: {value[:20]!r}... is not a token hash (expected "
                          f"{HASH_PREFIX} and 64 hex digits, as `kb-mcp token hash` prints)")
    return HASH_PREFIX + text


def hashes_from_env(value: str | None) -> tuple[str, ...]:
    """The hashes of ``KB_MCP_TOKEN_HASHES`` (comma separated; empty items ignored)."""
    if not value:
        return ()
    return tuple(parse_hash(item, HASHES_ENV) for item in value.split(",") if item.strip())


def check_name(name: str) -> str:
    if not _NAME.fullmatch(name):
        raise ConfigError(f"token name {name[:80]!r} is not allowed: use 1 to 64 letters, "
                          "digits, '.', '_' or '-', starting with a letter or digit")
    return name


# -- reading ---------------------------------------------------------------------------
def read_tokens(path: Path) -> list[StoredToken]:
    """The tokens in ``path``; [] when it does not exist. ``ConfigError`` when it is not
    a safe regular file (see ``unsafe_reason``) or not a tokens file."""
    found = read_tokens_if_changed(path, None)
    return [] if found is None else found[1] or []


#: What identifies one version of the file: (device, inode, size, mtime in ns, ctime in ns).
FileStamp = tuple[int, int, int, int, int]


def unsafe_reason(info: os.stat_result) -> str | None:
    """Why a tokens file with these facts may not be trusted, or None when it may: it
    must be a regular file with one name, owned by the user running kb-mcp, and
    writable by nobody else (whoever can write it can let themselves in)."""
    if not stat.S_ISREG(info.st_mode):
        return "is not a regular file"
    if info.st_nlink != 1:
        return "has more than one name (a hard link); kb-mcp reads only a file of its own"
    if info.st_uid != os.geteuid():
        return (f"is owned by uid {info.st_uid}, not by the user running kb-mcp "
                f"(uid {os.geteuid()})")
    if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return (f"is writable by other users (mode {stat.S_IMODE(info.st_mode):o}); "
                "make it private with `chmod 600`")
    return None


def read_tokens_if_changed(
    path: Path, seen: FileStamp | None
) -> tuple[FileStamp, list[StoredToken] | None] | None:
    """The file's stamp and tokens, checked and read through one descriptor; None when
    the file does not exist. When its stamp equals ``seen`` the file is not read again
    (the tokens are then None, unchanged), but its safety is checked every time."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise ConfigError(f"tokens file {path} is a symbolic link; kb-mcp does not "
                              "follow one there") from None
        raise ConfigError(f"cannot read tokens file {path}: {exc.strerror}") from None
    try:
        info = os.fstat(fd)
        problem = unsafe_reason(info)
        if problem is not None:
            raise ConfigError(f"tokens file {path} {problem}")
        stamp = (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)
        if stamp == seen:
            return stamp, None
        raw = _read_at_most(fd, MAX_FILE_BYTES + 1)
    except OSError as exc:
        raise ConfigError(f"cannot read tokens file {path}: {exc.strerror}") from None
    finally:
        os.close(fd)
    if len(raw) > MAX_FILE_BYTES:
        raise ConfigError(f"tokens file {path} is larger than {MAX_FILE_BYTES} bytes")
    return stamp, _parse(raw, path)


def _read_at_most(fd: int, limit: int) -> bytes:
    chunks: list[bytes] = []
    size = 0
    while size < limit and (chunk := os.read(fd, min(65536, limit - size))):
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)


def _parse(raw: bytes, path: Path) -> list[StoredToken]:
    try:
        data = json.loads(raw.decode("utf-8"))
        entries = data["tokens"]
        tokens = [StoredToken(name=check_name(str(e["name"])), created=str(e["created"]),
                              hash=parse_hash(str(e["hash"]), str(path))) for e in entries]
    except (UnicodeDecodeError, ValueError, KeyError, TypeError) as exc:
        raise ConfigError(f"tokens file {path} is not a kb-mcp tokens file ({exc}); "
                          "recreate it with `kb-mcp token create`") from None
    return tokens


# -- writing ---------------------------------------------------------------------------
def add_token(path: Path, name: str, *, now: datetime | None = None) -> tuple[str, StoredToken]:
    """Create a token called ``name``, store its hash in ``path`` and return the token
    (the only time it exists outside the client it is given to)."""
    check_name(name)
    created = (now or datetime.now(UTC)).strftime("%Y-%m-%dT%H:%M:%SZ")
    with _locked(path):
        tokens = read_tokens(path)
        if any(t.name == name for t in tokens):
            raise ConfigError(f"a token named {name!r} exists already in {path}; revoke it "
                              "first (`kb-mcp token revoke`) or choose another name")
        token = new_token()
        entry = StoredToken(name=name, created=created, hash=token_hash(token))
        _write(path, [*tokens, entry])
    return token, entry


def revoke_token(path: Path, name: str) -> StoredToken:
    """Remove the token called ``name`` from ``path``; ``ConfigError`` when none is."""
    with _locked(path):
        tokens = read_tokens(path)
        gone = [t for t in tokens if t.name == name]
        if not gone:
            known = ", ".join(t.name for t in tokens) or "none"
            raise ConfigError(f"no token named {name[:80]!r} in {path} (tokens: {known})")
        _write(path, [t for t in tokens if t.name != name])
    return gone[0]


def next_name(tokens: Iterable[StoredToken]) -> str:
    """``token-N``: the first such name not taken."""
    taken = {t.name for t in tokens}
    n = 1
    while f"token-{n}" in taken:
        n += 1
    return f"token-{n}"


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """An exclusive lock on ``<path>.lock`` for one read-modify-write of the file."""
    lock = path.with_name(path.name + ".lock")
    try:
        fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    except OSError as exc:
        raise ConfigError(f"cannot lock tokens file {path}: {exc.strerror}") from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _write(path: Path, tokens: list[StoredToken]) -> None:
    """Replace ``path`` with ``tokens``: a new 0600 file beside it, then a rename."""
    body = json.dumps({"format": _FORMAT, "tokens": [t.as_dict() for t in tokens]},
                      indent=2).encode("utf-8") + b"\n"
    temp = path.with_name(f".{path.name}.{secrets.token_hex(8)}.tmp")
    try:
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                     0o600)
    except OSError as exc:
        raise ConfigError(f"cannot write tokens file {path}: {exc.strerror}") from None
    try:
        with os.fdopen(fd, "wb") as handle:
            os.fchmod(handle.fileno(), 0o600)  # whatever the umask
            handle.write(body)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temp, path)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        if isinstance(exc, OSError):
            raise ConfigError(f"cannot write tokens file {path}: {exc.strerror}") from None
        raise
    with contextlib.suppress(OSError):  # the rename itself survives a crash
        dir_fd = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)


__all__ = [
    "HASHES_ENV",
    "TOKENS_FILE_NAME",
    "TOKEN_PREFIX",
    "StoredToken",
    "add_token",
    "default_tokens_file",
    "hashes_from_env",
    "new_token",
    "next_name",
    "parse_hash",
    "read_tokens",
    "read_tokens_if_changed",
    "revoke_token",
    "token_hash",
    "unsafe_reason",
]
