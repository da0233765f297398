"""Live delivery: the hub, the observe stream, and what keeps streams bounded.

- :mod:`.hub`: :class:`Hub` / :class:`Subscription` and the ``RESYNC``,
  ``CLOSED``, ``HEARTBEAT`` sentinels (every stream of the room uses it).
- :mod:`.sse`: ``GET /workspace/observe`` (framing, replay, heartbeats).
- :mod:`.guard`: bounded writes for event streams; per-request clean-up.
- :mod:`.stopping`: end the streams on SIGTERM.
"""

from .hub import CLOSED, HEARTBEAT, RESYNC, Hub, Subscription

__all__ = ["CLOSED", "HEARTBEAT", "RESYNC", "Hub", "Subscription"]
