"""The HTTP adapter (Falcon ASGI): routes → engine calls → JSON."""

from .app import create_app, RoomASGI

__all__ = ["create_app", "RoomASGI"]
