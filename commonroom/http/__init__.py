"""The HTTP adapter (Falcon ASGI): the room's edge, routes → engine calls → JSON."""

from .app import create_app
from .edge import Edge, Listener

__all__ = ["Edge", "Listener", "create_app"]
