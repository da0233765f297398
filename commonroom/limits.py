"""Request limits (seed ``protocol.txt``, HTTP): 600 requests a minute per bearer.

"Authenticated HTTP requests are limited to 600 per minute per bearer. The
observe stream counts as one request." :class:`RateLimiter` counts each
authenticated request on the session ingress against its bearer, in a
moving window of 60 s (the maintained ``limits`` library: its
``MovingWindowRateLimiter`` over in-process ``MemoryStorage``; the room is
one process, so memory is the whole truth). The key is the bearer's sha256
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
import time

from limits import RateLimitItemPerMinute
from limits.storage import MemoryStorage
from limits.strategies import MovingWindowRateLimiter

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

    :meth:`hit` is cheap (in memory, no I/O) and may be called on the loop.
    """

    def __init__(self, per_minute: int | None = None):
        self.per_minute = configured_per_minute() if per_minute is None else per_minute
        self.item = RateLimitItemPerMinute(self.per_minute)
        self._limiter = MovingWindowRateLimiter(MemoryStorage())

    def hit(self, key: str) -> None:
        """Count one request for ``key`` (a token hash); ``LimitExceeded`` if over."""
        if self._limiter.hit(self.item, "bearer", key):
            return
        reset, _remaining = self._limiter.get_window_stats(self.item, "bearer", key)
        retry = max(1, math.ceil(reset - time.time()))
        raise LimitExceeded(
            f"more than {self.per_minute} requests in a minute with this bearer; "
            f"retry in {retry} s",
            details={"limit": self.per_minute, "window_seconds": 60},
            retry_after_seconds=retry,
        )
