"""Who calls the engine: :class:`Actor`, a participant's session or the local operator.

The bottom of the engine: :mod:`commonroom.engine.base` (capability checks,
the operator) and :mod:`commonroom.engine.sessions_cache` (the actors of
live sessions, by token digest) both build on it.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Actor:
    """Who is calling: a participant's session, or the local operator.

    ``capabilities`` is the session's grant; the operator holds all of them.
    """

    kind: str  # "session" | "operator"
    capabilities: frozenset[str]
    session_id: str | None = None
    participant_id: str | None = None
    participant_name: str | None = None
    expires_at: str | None = None

    @property
    def name(self) -> str:
        """A display name: the participant's, or ``operator``."""
        return self.participant_name or "operator"
