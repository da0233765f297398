"""Request limits (seed ``protocol.txt``, HTTP): 600 requests a minute per bearer.

"Authenticated HTTP requests are limited to 600 per minute per bearer. The
observe stream counts as one request." :class:`RateLimiter` counts each
authenticated request on the session ingress against its bearer, in a
moving window of 60 s (at most N requests in any 60 s; in memory: the room
is one process, so memory is the whole truth). The key is the bearer's sha256
(``tokens.digest``), never the token itself.

Over the limit: :class:`commonroom.errors.LimitExceeded` (429) with the
recovery field ``retry_after_seconds`` (whole seconds until the oldest
request in the window leaves it, at least 1); the HTTP layer adds the
``Retry-After`` header.

The owner port (the local operator, 127.0.0.1 only) is not limited; see
``docs/live.md``. ``COMMONROOM_RATE_LIMIT`` (requests per minute, at least 1) overrides the
seed's 600 for an operator who needs another number; the tests use 600.
"""

from __future__ import annotations

import math
import os
import threading
import time
from collections import deque

from .errors import LimitExceeded

#: Authenticated requests per minute per bearer (the seed's number).
DEFAULT_PER_MINUTE = 600


def configured_per_minute() -> int:
    """``COMMONROOM_RATE_LIMIT`` when set (an integer ≥ 1), else 600; ``ValueError`` if bad."""
    raw = os.environ.get("COMMONROOM_RATE_LIMIT", "").strip()
    if not raw:
        return DEFAULT_PER_MINUTE
    try:
        value = int(raw)
    except ValueError:
        raise ValueError(f"COMMONROOM_RATE_LIMIT must be an integer, not {raw!r}") from None
    if value < 1:
        raise ValueError("COMMONROOM_RATE_LIMIT must be at least 1")
    return value


class RateLimiter:
    """Per-bearer moving-window limiter; build it inside the worker (after fork).

    :meth:`hit` is cheap (in memory, no I/O, O(1) amortized: a deque of the
    window's hit times per key) and may be called on the loop. A key whose
    window emptied is dropped at its next hit or by the periodic sweep, so
    memory is bounded by the hits of the last minute.
    """

    def __init__(self, per_minute: int | None = None, window_seconds: float = 60.0):
        self.per_minute = configured_per_minute() if per_minute is None else per_minute
        self.window = window_seconds
        self._hits: dict[str, deque[float]] = {}
        self._lock = threading.Lock()
        self._next_sweep = 0.0

    def hit(self, key: str) -> None:
        """Count one request for ``key`` (a token hash); ``LimitExceeded`` if over."""
        now = time.monotonic()
        horizon = now - self.window
        with self._lock:
            if now >= self._next_sweep:
                self._sweep(horizon)
                self._next_sweep = now + self.window
            hits = self._hits.get(key)
            if hits is None:
                hits = self._hits[key] = deque()
            while hits and hits[0] <= horizon:
                hits.popleft()
            if len(hits) < self.per_minute:
                hits.append(now)
                return
            retry = max(1, math.ceil(hits[0] + self.window - now))
        raise LimitExceeded(
            f"more than {self.per_minute} requests in a minute with this bearer; "
            f"retry in {retry} s",
            details={"limit": self.per_minute, "window_seconds": int(self.window)},
            retry_after_seconds=retry,
        )

    def _sweep(self, horizon: float) -> None:
        for key in [k for k, hits in self._hits.items() if not hits or hits[-1] <= horizon]:
            del self._hits[key]
