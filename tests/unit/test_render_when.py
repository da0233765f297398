"""``ce``'s relative times (commonroom.cli.printing.when): to the nearest of the largest unit reached."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from commonroom.cli.printing import when

NOW = datetime(2026, 12, 1, 12, 0, 0, tzinfo=timezone.utc)


@pytest.mark.parametrize("offset, shown", [
    (timedelta(days=30) - timedelta(seconds=3), "in 30d"),  # a 30-day session just after it started
    (timedelta(days=1, hours=11), "in 1d"),
    (timedelta(days=1, hours=12), "in 2d"),
    (-timedelta(minutes=59, seconds=40), "1h ago"),
    (-timedelta(seconds=90), "2m ago"),
    (-timedelta(seconds=10), "10s ago"),
    (timedelta(seconds=3), "just now"),
    (timedelta(seconds=7), "in 7s"),
])
def test_when_rounds_to_the_nearest(offset: timedelta, shown: str):
    assert when((NOW + offset).isoformat(), now=NOW) == shown


def test_when_keeps_what_it_cannot_read():
    assert when(None) == "-" and when("not a time") == "not a time"
