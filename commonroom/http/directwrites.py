"""Writes answered before Falcon: a lease, a proposal, a post at the cost of their checks.

Issue 13 (writes: 16 clients ≥ 0.3× the bare fsync'd SQLite transaction
rate). The room's one worker is CPU-bound under concurrent writes, and
what a write costs the event loop outside the operation itself was
mostly the stack around it: Falcon's request and response objects, the
middleware, the responder, and the cached-read wrappers it passes
through on the way (``docs/performance.md``).

:class:`DirectWrites` wraps the ingress app and answers a write itself
when its request is plain, with the answer the Falcon route gives
(``tests/unit/test_direct_writes.py`` compares them byte for byte). It runs
the route's own steps, in the functions both share:

- the request: a method and path of a write on this listener (Falcon's own
  router, :class:`falcon.routing.CompiledRouter`, over the same
  templates), no query string, no header sent twice among those read, and
  a body framed by a ``Content-Length`` of at most :data:`BODY_BYTES`
  exactly when the operation takes a body (none otherwise, and no
  ``Transfer-Encoding``);
- the bearer is one live session (``Engine.authenticate``, the session
  cache) holding the operation's capability (``Operation.authorize``);
- the request is counted against the bearer's rate limit, as the
  middleware counts it.

Anything else goes to the app untouched and unread, which answers it as
always (nothing was counted for it here: the limiter records no refused
request). Past these checks the request is this path's to answer: its
body is read, made the operation's input (:meth:`Binding.from_body`,
:meth:`Binding.with_path`: a bad body is the same ``invalid_request``),
the operation runs on the :class:`~commonroom.operations.runner.Runner`,
and its answer or its error is sent as the route's
(:func:`~commonroom.wire.send`, :func:`~commonroom.wire.send_error`,
:func:`~commonroom.wire.send_internal_error` for a bug).
"""

from __future__ import annotations

import logging
from typing import Any, Awaitable, Callable

from falcon.routing import CompiledRouter

from ..errors import CommonroomError
from ..operations import Table
from ..operations.runner import Runner
from ..wire import Rendered, counted, send, send_error, send_internal_error
from .fastpath import bearer_actor
from .operations import Binding

__all__ = ["DirectWrites", "direct_writes", "BODY_BYTES"]

log = logging.getLogger("commonroom.http")

#: The largest body answered here; a longer one (a whole document proposed) goes to the app.
BODY_BYTES = 64 * 1024
#: The request headers read here.
_READ = (b"authorization", b"content-length", b"transfer-encoding")

Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]


def direct_writes(table: Table, listener: str) -> dict[str, dict[str, Binding]]:
    """The writes :class:`DirectWrites` may answer on ``listener``: path template → {method: Binding}.

    Every operation that changes state, is served on ``listener`` and is
    neither public nor a stream (those answer in their own way).
    """
    by_path: dict[str, dict[str, Binding]] = {}
    for op in table.http(listener):
        assert op.http is not None
        if op.read_only or op.streams or op.http.public or op.http.cache is not None:
            continue
        by_path.setdefault(op.http.path, {})[op.http.method] = Binding(op)
    return by_path


def _headers(raw: Any) -> dict[bytes, bytes] | None:
    """The headers read here (:data:`_READ`) by name, or None when one is sent twice."""
    found: dict[bytes, bytes] = {}
    for name, value in raw:
        if name in _READ:
            if name in found:
                return None
            found[name] = value
    return found


class DirectWrites:
    """ASGI wrapper of the ingress app (see the module docstring).

    ``app``: the ingress app; ``engine``: the room's engine (authenticate);
    ``runner``: the room's runner (the writer thread); ``limiter``: the
    ingress rate limiter (or None); ``writes``: from :func:`direct_writes`,
    routed by Falcon's own router over the same templates. ``served``
    counts the requests answered here.
    """

    def __init__(self, app: Callable, engine: Any, runner: Runner, limiter: Any,
                 writes: dict[str, dict[str, Binding]]):
        self.app = app
        self.engine = engine
        self.runner = runner
        self.limiter = limiter
        self.router = CompiledRouter()
        last = len(writes) - 1
        for number, (path, bindings) in enumerate(writes.items()):
            # compiled now (Falcon's ``compile`` flag), not at the first write: at startup, not in the
            # middle of serving (a lazy compile's memory and time landed in the fan-out bench's figures)
            self.router.add_route(path, bindings, compile=number == last)
        self.methods = frozenset(method for bindings in writes.values() for method in bindings)
        #: ``(method, path template)`` of every write answered here
        self.templates = tuple((method, path) for path, bindings in writes.items() for method in bindings)
        #: the statuses of the answers its operations give when they succeed
        self.statuses = frozenset(binding.http.status for bindings in writes.values() for binding in bindings.values())
        self.served = 0

    async def __call__(self, scope: dict[str, Any], receive: Receive, send_message: Send) -> None:  # noqa: D102
        taken = self.take(scope) if scope["type"] == "http" and scope["method"] in self.methods else None
        if taken is None:
            await self.app(scope, receive, send_message)
            return
        binding, params, actor, length = taken
        raw = await _body(receive, length)
        if raw is None:
            return  # the client left before the request began: nothing runs, nobody to answer
        out = await self.answer(binding, params, actor, raw, scope)
        await send_message({"type": "http.response.start", "status": out.status, "headers": out.asgi_headers()})
        await send_message({"type": "http.response.body", "body": out.data})

    async def answer(self, binding: Binding, params: dict[str, str], actor: Any, raw: bytes,
                     scope: dict[str, Any]) -> Rendered:
        """The answer to a request :meth:`take` took, whose body is ``raw``: the route's answer or error.

        A bug is logged with the request's method and path and answered as
        Falcon answers one (500); nothing else raises.
        """
        self.served += 1
        out = Rendered()
        try:
            values = binding.from_body(raw, params) if binding.http.has_body else binding.with_path({}, params)
            send(out, await self.runner.run(binding.op, actor, values), binding.http.status)
        except CommonroomError as error:
            send_error(out, error)
        except Exception:
            log.exception("%s %s failed", scope["method"], scope["path"])
            send_internal_error(out)
        return out

    def take(self, scope: dict[str, Any]) -> tuple[Binding, dict[str, str], Any, int] | None:
        """``(binding, path parameters, actor, body length)`` of a request answered here (counted), else None.

        ``scope``: an ASGI HTTP scope, or the keys of it read here
        (``method``, ``path``, ``query_string``, ``headers``).
        """
        if scope["query_string"]:
            return None
        found = self.router.find(scope["path"])
        if found is None:
            return None
        bindings: dict[str, Binding] = found[0]  # type: ignore[assignment]  # what direct_writes added
        binding = bindings.get(scope["method"])
        if binding is None:
            return None
        headers = _headers(scope["headers"])
        if headers is None or b"transfer-encoding" in headers:
            return None
        length = headers.get(b"content-length")
        if binding.http.has_body:
            if length is None or not length.isdigit() or int(length) > BODY_BYTES:
                return None
        elif length is not None:
            return None
        found_actor = bearer_actor(self.engine, binding.op, headers.get(b"authorization"))
        if found_actor is None:
            return None
        actor, digest = found_actor
        if not counted(self.limiter, digest):
            return None  # the app counts it and answers 429
        return binding, found[2] or {}, actor, 0 if length is None else int(length)


async def _body(receive: Receive, length: int) -> bytes | None:
    """The body as Falcon reads it: ``length`` bytes (as framed), or None if the client left first.

    As Falcon's app, the first message is awaited even without a body, and
    a client gone by then (``http.disconnect``) gets no answer and nothing
    runs; as Falcon's stream, the body ends at ``length`` bytes, at the
    message that says there is no more, or where the client left. The
    worker's ``BodyGuard`` hands a body's first message itself (empty),
    bounds the wait for the rest and refuses a body cut short (its
    exception ends the request, as it does under Falcon).
    """
    message = await receive()
    if message["type"] != "http.request":
        return None
    chunks: list[bytes] = []
    remaining = length
    while True:
        chunk = message.get("body", b"")
        if len(chunk) > remaining:
            chunk = chunk[:remaining]
        chunks.append(chunk)
        remaining -= len(chunk)
        if remaining <= 0 or not message.get("more_body", False):
            return b"".join(chunks)
        message = await receive()
        if message["type"] != "http.request":
            return b"".join(chunks)
