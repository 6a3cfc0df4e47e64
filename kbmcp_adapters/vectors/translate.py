"""LanceDB failures as core errors: one line, no credentials, object-store outages named."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator, Sequence

from kbmcp_core.errors import StoreError, VectorsUnreachable, VectorsUnreadable
from kbmcp_core.settings import without_userinfo

__all__ = ["translate"]


@contextlib.contextmanager
def translate(
    action: str, *, reading: bool = False, remote: str | None = None,
    secrets: Sequence[str] = (),
) -> Iterator[None]:
    """Turn LanceDB / Arrow / I/O failures and LanceDB panics into a one-line core error:
    ``VectorsUnreadable`` when ``reading`` (``VectorsUnreachable`` when the object store at
    ``remote`` does not answer or refuses access), else ``StoreError``. No message carries
    one of ``secrets``, a URL's credentials, or the chained library error (whose text may)."""
    try:
        yield
    except (RuntimeError, ValueError, OSError, KeyError, TypeError) as exc:
        raise _failure(action, exc, reading, remote, secrets) from _cause(exc, remote)
    except BaseException as exc:
        # pyo3's PanicException derives from BaseException; a panic in LanceDB's async
        # runtime arrives as RustPanic (an Exception). Neither is a bug of the caller.
        if _is_panic(exc):
            raise _failure(action, None, reading, remote, secrets) from None
        if not isinstance(exc, Exception) or not _is_arrow_error(exc):
            raise
        raise _failure(action, exc, reading, remote, secrets) from _cause(exc, remote)


def _cause(exc: BaseException, remote: str | None) -> BaseException | None:
    """The library error to chain: none for object storage (its text may echo a request)."""
    return exc if remote is None else None


#: What an object store's failure says, and the sentence a user reads instead.
_UNREACHABLE = (
    (re.compile(r"connection refused", re.I), "connection refused"),
    (re.compile(r"dns error|failed to lookup|name or service not known", re.I),
     "the host name does not resolve"),
    (re.compile(r"\btimed out\b|\btimeout\b", re.I), "the connection timed out"),
    (re.compile(r"error sending request|tcp connect error|connect error|"
                r"connection (reset|closed|aborted)|broken pipe", re.I),
     "the connection failed"),
    (re.compile(r"InvalidAccessKeyId|SignatureDoesNotMatch|AccessDenied|ExpiredToken|"
                r"\b403\b|Forbidden|\b401\b|Unauthorized|credential", re.I),
     "access refused: check the credentials"),
    (re.compile(r"NoSuchBucket|bucket does not exist|ContainerNotFound", re.I),
     "the bucket does not exist"),
)


def _failure(action: str, exc: BaseException | None, reading: bool, remote: str | None,
             secrets: Sequence[str]) -> StoreError:
    if exc is None:
        detail = "LanceDB panicked reading its files"
    else:
        detail = _one_line(exc)
        if remote is not None:
            text = str(exc)
            for pattern, why in _UNREACHABLE:
                if pattern.search(text):
                    detail = f"could not {action}: {remote} does not answer ({why})"
                    return VectorsUnreachable(detail) if reading else StoreError(detail)
            detail = _scrub(detail, secrets)
    if reading:
        return VectorsUnreadable(f"could not {action}: {detail}")
    return StoreError(f"could not {action}: {detail}")


def _scrub(text: str, secrets: Sequence[str]) -> str:
    for secret in sorted(secrets, key=len, reverse=True):
        text = text.replace(secret, "***")
    return without_userinfo(text)


def _is_panic(exc: BaseException) -> bool:
    kind = type(exc)
    return kind.__name__ in ("PanicException", "RustPanic") and kind.__module__.startswith("pyo3")


def _is_arrow_error(exc: BaseException) -> bool:
    import pyarrow as pa

    return isinstance(exc, pa.ArrowException)


#: The Rust source location LanceDB appends to its messages: noise for a user.
_RUST_SOURCE = re.compile(r",\s*\S+\.rs:\d+:\d+\s*$")


def _one_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return _RUST_SOURCE.sub("", lines[0] if lines else type(exc).__name__)[:300]
