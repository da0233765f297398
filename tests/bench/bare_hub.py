"""The anchor for fan-out: a bare SSE hub on Falcon ASGI (gunicorn ``-k asgi -w 1``), no auth, no database.

- ``GET /workspace/observe``: a ``text/event-stream``; every event published
  after the stream opened arrives as ``id: N`` + ``data: {...}``.
- ``POST /publish``: makes event N+1, encodes its frame once and hands the
  bytes to every subscriber's bounded queue; answers ``{"id", "time"}``
  (``time``: epoch seconds when it was made).
- ``GET /workspace/document``: a small answer, for the prober.

The same wire shape the fan-out bench reads from the room, and nothing else.
"""

from __future__ import annotations

import asyncio
import json
import time

import falcon
import falcon.asgi

QUEUE = 256


class Hub:
    """Subscribers' queues and the publisher."""

    def __init__(self) -> None:
        self.queues: set[asyncio.Queue] = set()
        self.last = 0

    async def on_get_observe(self, req: falcon.asgi.Request, resp: falcon.asgi.Response) -> None:  # noqa: D102
        queue: asyncio.Queue = asyncio.Queue(QUEUE)
        self.queues.add(queue)

        async def frames():
            try:
                yield b": open\n\n"
                while True:
                    yield await queue.get()
            finally:
                self.queues.discard(queue)

        resp.content_type = "text/event-stream"
        resp.stream = frames()

    async def on_post_publish(self, req: falcon.asgi.Request, resp: falcon.asgi.Response) -> None:  # noqa: D102
        self.last += 1
        now = time.time()
        frame = f"id: {self.last}\nevent: bench\ndata: {json.dumps({'time': now})}\n\n".encode()
        for queue in list(self.queues):
            if queue.full():
                self.queues.discard(queue)  # a stalled reader is dropped, as the room does
            else:
                queue.put_nowait(frame)
        resp.media = {"id": self.last, "time": now}

    async def on_get_document(self, req: falcon.asgi.Request, resp: falcon.asgi.Response) -> None:  # noqa: D102
        resp.media = {"text": "# bare\n", "version": self.last}


hub = Hub()
app = falcon.asgi.App()
app.add_route("/workspace/observe", hub, suffix="observe")
app.add_route("/publish", hub, suffix="publish")
app.add_route("/workspace/document", hub, suffix="document")
