"""The room's gunicorn settings that do not follow what else is installed (docs/decisions.md,
*The worker runs asyncio's own event loop and gunicorn's Python parser*).

gunicorn's ``asgi`` worker would take uvloop and the gunicorn_h1c parser whenever they can be
imported (``asgi_loop`` and ``http_parser`` ``"auto"``); the room pins both, so an environment
that happens to hold either runs the room exactly as tested.
"""

from __future__ import annotations

from pathlib import Path

from commonroom.server import RoomApplication, ServeOptions, WorkerConfig


def test_the_loop_and_the_parser_are_pinned(tmp_path: Path):
    document = tmp_path / "doc.md"
    app = RoomApplication(WorkerConfig(document, owner_port=1, owner_token_hash="x"), [3, 4], ServeOptions(document))
    assert (app.cfg.asgi_loop, app.cfg.http_parser) == ("asyncio", "python")
    assert app.cfg.workers == 1 and app.cfg.worker_class.__name__ == "RoomWorker"
