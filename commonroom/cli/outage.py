"""Saying when the room went away and when it came back, for the commands that follow it.

``ce observe`` and ``ce board observe --follow`` keep following while the
room restarts or stops for a while: on the first failed connection they
say once (stderr, one line, local time) that the room went away and that
they keep reconnecting, wait with a backoff (0.5 s doubling to 10 s), and
on the first answer again say that it is back and for how long it was
away. Imports no Typer.
"""

from __future__ import annotations

import sys
import time
from datetime import datetime
from typing import Callable

#: Reconnect backoff (seconds): first wait, cap.
BACKOFF_START, BACKOFF_MAX = 0.5, 10.0


class Outage:
    """One follower's view of the room's absences: :meth:`lost` on each failed attempt, :meth:`back` on success.

    ``say`` prints one status line (``ce observe: …`` on stderr).
    """

    def __init__(self, say: Callable[[str], None], sleep: Callable[[float], None] = time.sleep):
        self.say = say
        self.sleep = sleep
        self.since: float | None = None
        self.delay = BACKOFF_START

    def lost(self, why: str, resuming: str) -> None:
        """A connection failed (``why``): said once per absence, then wait the next backoff step."""
        if self.since is None:
            self.since = time.monotonic()
            self.say(f"the room went away at {datetime.now().strftime('%H:%M:%S')} ({why}); reconnecting "
                     f"(every {BACKOFF_START:g} s up to {BACKOFF_MAX:g} s), {resuming}")
        self.sleep(self.delay)
        self.delay = min(self.delay * 2, BACKOFF_MAX)

    def back(self, resuming: str) -> None:
        """A connection answered: said once when it follows an absence; the backoff starts over."""
        if self.since is not None:
            away = time.monotonic() - self.since
            self.say(f"the room is back at {datetime.now().strftime('%H:%M:%S')} (away {away:.0f} s); {resuming}")
            self.since = None
        self.delay = BACKOFF_START


def status_line(prefix: str) -> Callable[[str], None]:
    """A ``say`` for :class:`Outage`: ``prefix: message`` on stderr, flushed."""
    return lambda message: print(f"{prefix}: {message}", file=sys.stderr, flush=True)
