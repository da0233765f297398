"""The worker serves only once old versions' checkpoints are warm (commonroom/room.py, STARTUP_WARM_SECONDS).

Before, the warm-up ran beside the first requests, and a read of an old
version right after a restart built its checkpoint itself (p99 ~20 ms for
the 963 KB changelog). The room's ASGI lifespan now completes its startup
only after the warmer is idle, and gunicorn starts serving after the
lifespan startup, so the first read already finds every checkpoint.
"""

from __future__ import annotations

import asyncio

from commonroom.engine import OPERATOR, Engine
from commonroom.http.edge import Edge
from commonroom.http.lifespan import Lifespan
from commonroom.room import build_room

LINES = 600


def stored_checkpoints(engine: Engine) -> list[int]:
    return [n for (n,) in engine.store.db.execute_sql(
        'SELECT "number" FROM "version" WHERE "content" IS NOT NULL OR "packed" IS NOT NULL ORDER BY "number"')]


async def lifespan(app: Edge, check) -> None:
    """Run the app's lifespan: startup, ``check()`` right after startup.complete, shutdown."""
    inbox: asyncio.Queue = asyncio.Queue()
    sent: list[str] = []

    async def receive():
        return await inbox.get()

    async def send(message):
        sent.append(message["type"])
        if message["type"] == "lifespan.startup.complete":
            check()
            await inbox.put({"type": "lifespan.shutdown"})

    await inbox.put({"type": "lifespan.startup"})
    await app({"type": "lifespan"}, receive, send)
    assert sent == ["lifespan.startup.complete", "lifespan.shutdown.complete"]


def test_startup_completes_with_every_checkpoint_warm(tmp_path):
    document = tmp_path / "doc.md"
    document.write_text("".join(f"line {i} of a long document\n" for i in range(1, LINES + 1)))
    writer = Engine.open(document)
    for n in range(2, 400):
        k = 1 + (n * 37) % LINES
        writer.write(OPERATOR, n - 1, f"edit {n}\n", {"lines": [k, k]})
    stored = stored_checkpoints(writer)
    writer.close()
    assert len(stored) >= 4

    engine, owner, ingress, hooks = build_room(document, "0" * 64)
    app = Edge(owner, ingress, 1, Lifespan(hooks.startup, list(hooks)))
    warm: dict[str, list[int]] = {}

    def check() -> None:
        plain, encoded = engine._checkpoint_cache(False), engine._checkpoint_cache(True)
        warm["plain"] = [n for n in stored if n in plain]
        warm["encoded"] = [n for n in stored if n in encoded]

    asyncio.run(lifespan(app, check))
    assert warm == {"plain": stored, "encoded": stored}
