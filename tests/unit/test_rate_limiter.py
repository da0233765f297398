"""The per-bearer moving window (commonroom/limits.py), with a short window."""

from __future__ import annotations

import time

import pytest

from commonroom.errors import LimitExceeded
from commonroom.limits import RateLimiter


def test_at_most_n_in_any_window_then_the_oldest_leaves():
    limiter = RateLimiter(3, window_seconds=0.3)
    for _ in range(3):
        limiter.hit("a")
    with pytest.raises(LimitExceeded) as refused:
        limiter.hit("a")
    assert refused.value.recovery["retry_after_seconds"] >= 1
    limiter.hit("b")  # another bearer has its own window
    time.sleep(0.35)
    limiter.hit("a")
    assert len(limiter._hits["a"]) == 1


def test_idle_keys_are_swept():
    limiter = RateLimiter(3, window_seconds=0.05)
    for key in "abc":
        limiter.hit(key)
    time.sleep(0.1)
    limiter.hit("d")
    assert set(limiter._hits) == {"d"}
