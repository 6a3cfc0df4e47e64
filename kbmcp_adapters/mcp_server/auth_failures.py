"""Bearer tokens that are not accepted, per client address: counted, logged in a few lines
(never the token), and held back once one address sends too many, so guessing is slow
and one address's guesses slow no other address.

The client address is the one the rest of the server uses (``http_proxy.peer_of``: a
trusted proxy's ``X-Forwarded-For``, else the connection's peer). A held-back address gets
``429`` with ``Retry-After`` for every request that carries a token, accepted or not, so
the answer tells nothing about the token. The table keeps at most ``max_addresses``
addresses, the least recently seen leaving first.
"""

from __future__ import annotations

import logging
import math
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

log = logging.getLogger(__name__)


@dataclass(slots=True)
class _Address:
    window_start: float  # when the current count of failures began
    failures: int = 0  # failures since window_start
    held_until: float = 0.0  # requests with a token are answered 429 until then
    logged_at: float = -math.inf  # when this address last had a log line
    unlogged: int = 0  # failures since that line


class FailedTokens:
    """After ``allowed`` failures within ``window_s`` seconds, an address is held back for
    ``window_s`` seconds. Its first failure is logged at once, its being held back too;
    other failures at most once per ``log_every_s`` seconds, with their count."""

    def __init__(self, allowed: int = 10, window_s: float = 60.0, log_every_s: float = 60.0,
                 max_addresses: int = 4096,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.allowed = allowed
        self.window_s = window_s
        self.log_every_s = log_every_s
        self.max_addresses = max_addresses
        self.clock = clock
        self._addresses: OrderedDict[str, _Address] = OrderedDict()

    def __len__(self) -> int:
        """How many addresses are counted now (at most ``max_addresses``)."""
        return len(self._addresses)

    def retry_after(self, address: str) -> int | None:
        """Seconds until ``address`` may present a token again, or None when it may now."""
        seen = self._addresses.get(address)
        if seen is None:
            return None
        left = seen.held_until - self.clock()
        return math.ceil(left) if left > 0 else None

    def failed(self, address: str) -> None:
        """Count a token from ``address`` that was not accepted (answered 401)."""
        now = self.clock()
        seen = self._addresses.get(address)
        if seen is None or now - seen.window_start >= self.window_s:
            logged_at, unlogged = (seen.logged_at, seen.unlogged) if seen else (-math.inf, 0)
            seen = _Address(now, logged_at=logged_at, unlogged=unlogged)
        self._addresses[address] = seen
        self._addresses.move_to_end(address)
        while len(self._addresses) > self.max_addresses:
            self._addresses.popitem(last=False)
        seen.failures += 1
        seen.unlogged += 1
        if seen.failures >= self.allowed:
            seen.held_until = now + self.window_s
            log.warning("%s sent %d bearer tokens that are not accepted within %gs: its "
                        "requests with a token are answered 429 for the next %gs",
                        address, seen.failures, self.window_s, self.window_s)
            seen.window_start, seen.failures = seen.held_until, 0  # a new count after it
            seen.logged_at, seen.unlogged = now, 0
        elif now - seen.logged_at >= self.log_every_s:
            log.warning("refused %d request(s) from %s with a bearer token that is not "
                        "accepted (401)%s", seen.unlogged, address,
                        "" if seen.logged_at == -math.inf else
                        f" in the {now - seen.logged_at:.0f}s since the last such line")
            seen.logged_at, seen.unlogged = now, 0


__all__ = ["FailedTokens"]
