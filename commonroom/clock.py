"""Time: one clock object passed in, RFC 3339 with +00:00 and microseconds.

Seed ``protocol.txt`` (Persistence): "Timestamps are RFC 3339 with a numeric
offset (+00:00) and microsecond precision."
"""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass, field


_UTC = _dt.timezone.utc


def rfc3339(moment: _dt.datetime) -> str:
    """``2026-11-29T08:00:00.000000+00:00`` for an aware datetime (UTC)."""
    if moment.tzinfo is not _UTC:
        moment = moment.astimezone(_UTC)
    return moment.isoformat(timespec="microseconds")


def parse_rfc3339(text: str) -> _dt.datetime:
    """Parse an RFC 3339 timestamp (``Z`` accepted); ``ValueError`` if not one."""
    value = _dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    if value.tzinfo is None:
        raise ValueError(f"timestamp without offset: {text!r}")
    return value.astimezone(_dt.timezone.utc)


@dataclass
class Clock:
    """The wall clock; tests pass ``offset`` (seconds) to move time forward."""

    offset: float = field(default=0.0)

    def now(self) -> _dt.datetime:
        """The current UTC time (plus ``offset`` seconds)."""
        moment = _dt.datetime.now(_UTC)
        return moment + _dt.timedelta(seconds=self.offset) if self.offset else moment

    def stamp(self) -> str:
        """``rfc3339(self.now())``."""
        return rfc3339(self.now())

    def after(self, seconds: float, since: _dt.datetime | None = None) -> str:
        """The RFC 3339 stamp ``seconds`` after ``since`` (a moment this clock gave; default now)."""
        return rfc3339((since or self.now()) + _dt.timedelta(seconds=seconds))
