"""The anchor for HTTP reads: a bare Falcon ASGI app answering pre-encoded bytes.

Served by gunicorn ``-k asgi -w 1`` like the room (:func:`serve`). Every
path answers ``200`` with the bytes of the file named by
``BARE_APP_BODY`` (``resp.data``, ``application/json``): no
authentication, no rate limit, no database. That is the ceiling of the
stack for a read of the same answer bytes.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import falcon
import falcon.asgi

BODY = Path(os.environ["BARE_APP_BODY"]).read_bytes() if os.environ.get("BARE_APP_BODY") else b"{}"


class Answer:
    """Every GET answers :data:`BODY`."""

    async def on_get(self, req: falcon.asgi.Request, resp: falcon.asgi.Response, **_: str) -> None:  # noqa: D102
        resp.content_type = "application/json"
        resp.data = BODY


app = falcon.asgi.App()
app.add_sink(Answer().on_get, "/")


def free_port() -> int:
    """A free TCP port on 127.0.0.1."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def serve(body: Path, module: str = "tests.bench.bare_app:app",
          env: dict[str, str] | None = None) -> tuple[subprocess.Popen, str]:
    """Start gunicorn ``-k asgi -w 1`` serving ``module`` with ``body``; the process and its base URL.

    ``env`` adds to the app's environment (:mod:`tests.bench.bare_writes` names its database there).
    """
    port = free_port()
    root = Path(__file__).resolve().parents[2]
    proc = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "-k", "asgi", "-w", "1", "-b", f"127.0.0.1:{port}",
         # the room's own loop and parser (commonroom/roomapp.py): gunicorn's "auto" would take uvloop or
         # the gunicorn_h1c parser whenever installed, and the anchor would then measure another stack
         "--asgi-loop", "asyncio", "--http-parser", "python", "--log-level", "warning", module],
        env={**os.environ, "BARE_APP_BODY": str(body), "PYTHONPATH": str(root), **(env or {})},
        cwd=root, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return proc, f"http://127.0.0.1:{port}"
        except OSError:
            time.sleep(0.05)
    proc.kill()
    raise RuntimeError("the bare app did not start")
