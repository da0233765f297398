"""In-process engines for tests: a clock that moves only when told to.

``FakeClock`` is a :class:`commonroom.clock.Clock` whose ``now()`` is a fixed
moment that :meth:`FakeClock.advance` moves; inject it with
``Engine.open(document, clock=...)`` to test TTLs (leases, sessions,
invitations) without sleeping. ``open_engine`` writes a document into a
folder and opens its own engine on it, so a test can hold several.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from pathlib import Path

from commonroom.clock import Clock
from commonroom.engine import Engine
from commonroom.vocabulary import CAPABILITIES

START = dt.datetime(2026, 11, 29, 8, 0, 0, tzinfo=dt.timezone.utc)
#: Every capability (an invitation granting them all).
ALL = list(CAPABILITIES)


@dataclass
class FakeClock(Clock):
    """``now()`` is ``moment`` (UTC); only :meth:`advance` moves it."""

    moment: dt.datetime = field(default=START)

    def now(self) -> dt.datetime:
        """The fake moment (plus ``offset``, as ``Clock`` does)."""
        return self.moment + dt.timedelta(seconds=self.offset)

    def advance(self, seconds: float) -> None:
        """Move time forward by ``seconds`` (may be fractional)."""
        self.moment += dt.timedelta(seconds=seconds)


def open_engine(folder: Path, text: str, *, clock: Clock | None = None, name: str = "doc.md") -> Engine:
    """Write ``text`` to ``folder/name`` and open an engine on it (ingress recorded)."""
    folder.mkdir(parents=True, exist_ok=True)
    document = folder / name
    document.write_text(text, encoding="utf-8")
    engine = Engine.open(document, clock=clock or FakeClock())
    engine.set_ingress({"host": "127.0.0.1", "port": 1})
    return engine


def join(engine: Engine, name: str, capabilities: list[str] | None = None, **invite: int):
    """Invite and join ``name``; returns ``(actor, join result)``."""
    token = engine.invite(name, capabilities or ALL, **invite)["token"]
    joined = engine.join(token)
    return engine.authenticate(joined["token"]), joined
