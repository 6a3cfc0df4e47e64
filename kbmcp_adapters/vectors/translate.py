"""LanceDB failures as core errors: one line, no credentials, object-store outages named.

An object store that does not answer costs a call seconds of LanceDB's own retries (a
stopped S3 server: ~2-5 s per call, and a search makes two); once one call has found it
down, an ``Outage`` makes the calls of the next ``OUTAGE_HOLD_S`` seconds fail at once with
the same reason (a search answers by keywords without waiting again), then tries again.
"""

from __future__ import annotations

import contextlib
import re
import threading
import time
from collections.abc import Callable, Iterator, Sequence

from kbmcp_core.errors import StoreError, VectorsUnreachable, VectorsUnreadable
from kbmcp_core.settings import without_userinfo

__all__ = ["OUTAGE_HOLD_S", "Outage", "translate"]

#: After an object store was found not answering, calls fail at once for this long.
OUTAGE_HOLD_S = 10.0


class Outage:
    """The last time an object store did not answer, and why (one per store)."""

    def __init__(self, hold_s: float = OUTAGE_HOLD_S,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._hold_s = hold_s
        self._clock = clock
        self._lock = threading.Lock()
        self._reason: str | None = None
        self._until = 0.0

    def current(self) -> str | None:
        """Why the store is taken as down, while the hold lasts; else None."""
        with self._lock:
            if self._reason is not None and self._clock() < self._until:
                return self._reason
            self._reason = None
            return None

    def record(self, reason: str) -> None:
        with self._lock:
            self._reason = reason
            self._until = self._clock() + self._hold_s


@contextlib.contextmanager
def translate(
    action: str, *, reading: bool = False, remote: str | None = None,
    secrets: Sequence[str] = (), outage: Outage | None = None,
) -> Iterator[None]:
    """Turn LanceDB / Arrow / I/O failures and LanceDB panics into a one-line core error:
    ``VectorsUnreadable`` when ``reading`` (``VectorsUnreachable`` when the object store at
    ``remote`` does not answer or refuses access), else ``StoreError``. No message carries
    one of ``secrets``, a URL's credentials, or the chained library error (whose text may).
    With an ``outage``, a store found down fails the calls of its hold at once."""
    down = outage.current() if outage is not None else None
    if down is not None:
        raise _unreachable(action, down, reading)
    try:
        yield
    except (RuntimeError, ValueError, OSError, KeyError, TypeError) as exc:
        raise _failure(action, exc, reading, remote, secrets, outage) from _cause(exc, remote)
    except BaseException as exc:
        # pyo3's PanicException derives from BaseException; a panic in LanceDB's async
        # runtime arrives as RustPanic (an Exception). Neither is a bug of the caller.
        if _is_panic(exc):
            raise _failure(action, None, reading, remote, secrets) from None
        if not isinstance(exc, Exception) or not _is_arrow_error(exc):
            raise
        raise _failure(action, exc, reading, remote, secrets, outage) from _cause(exc, remote)


def _unreachable(action: str, reason: str, reading: bool) -> StoreError:
    detail = f"could not {action}: {reason}"
    return VectorsUnreachable(detail) if reading else StoreError(detail)


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
             secrets: Sequence[str], outage: Outage | None = None) -> StoreError:
    if exc is None:
        detail = "LanceDB panicked reading its files"
    else:
        detail = _one_line(exc)
        if remote is not None:
            text = str(exc)
            for pattern, why in _UNREACHABLE:
                if pattern.search(text):
                    reason = f"{remote} does not answer ({why})"
                    if outage is not None:
                        outage.record(reason)
                    return _unreachable(action, reason, reading)
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
