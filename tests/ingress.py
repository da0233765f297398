"""The room's ingress stack over raw ASGI, for the front door tests (``tests/unit/test_front_*.py``).

:func:`sample_room` builds it as the room does (``commonroom.room.build_room``:
the ingress's edge → FrontDoor → StreamGuard → Falcon) on a
real engine and sidecar over a copy of ``examples/sample.md``; the tests
drive it with a hand-made ``receive``/``send`` instead of gunicorn.
"""

from __future__ import annotations

import copy
import shutil
from pathlib import Path
from typing import Any, Iterator

from commonroom import tokens
from commonroom.front import FrontDoor
from commonroom.http.edge import Listener
from commonroom.room import build_room
from tests.roomproc import ROOT


def http_scope(method: str, path: str, headers: list[tuple[bytes, bytes]], query: bytes = b"",
               **extra: Any) -> dict[str, Any]:
    """The ASGI scope gunicorn's ``asgi`` worker makes for one HTTP/1.1 request on loopback port 8000
    (``extra`` adds keys or replaces them)."""
    return {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": method, "scheme": "http",
            "path": path, "raw_path": path.encode(), "query_string": query, "root_path": "",
            "client": ("127.0.0.1", 50000), "server": ("127.0.0.1", 8000), "headers": list(headers), **extra}


class Ingress:
    """The session ingress as served (its edge over the front door), and ``app``: the same edge over the
    stack below the front door (Falcon's routes), sharing its router, sessions and rate limiter.

    ``served`` and ``door`` are the front door's.
    """

    def __init__(self, listener: Listener):
        assert isinstance(listener.app, FrontDoor)
        self.listener = listener
        self.front: FrontDoor = listener.app
        self.app = copy.copy(listener)
        self.app.app = self.front.app
        self.app.front = None  # Falcon's routes alone: nothing answered at the edge

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        await self.listener(scope, receive, send)

    @property
    def served(self) -> int:
        return self.front.served

    def door(self, method: str, template: str) -> Any:
        return self.front.door(method, template)


def sample_room(folder: Path) -> Iterator[tuple[Any, Ingress]]:
    """Yield ``(engine, ingress)`` for ``examples/sample.md`` copied into ``folder``; the engine is closed after.

    The ingress answers as ``127.0.0.1:8000``; set ``COMMONROOM_RATE_LIMIT``
    before calling (the limiter reads it as the room is built). A
    generator, so a fixture can ``yield from`` it and a test can loop over it.
    """
    doc = folder / "doc.md"
    shutil.copyfile(ROOT / "examples" / "sample.md", doc)
    engine, _owner, ingress, _hooks = build_room(doc, tokens.digest("owner-token"))
    engine.set_ingress({"host": "127.0.0.1", "port": 8000})
    try:
        yield engine, Ingress(ingress)
    finally:
        engine.close()
