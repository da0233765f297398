"""The front door of the session ingress: one ASGI wrapper answering what the table lets it.

:class:`FrontDoor` wraps the ingress app (see :mod:`commonroom.front`).
For a request it may answer (an ``http`` request without a query string
whose method and path name a door of :func:`~commonroom.front.routes.front_routes`)
it runs each shared step once, in this order, and passes the request to
the app as soon as one says no:

1. one router lookup (Falcon's own :class:`falcon.routing.CompiledRouter`
   over the same path templates as the routes);
2. one header scan (:func:`~commonroom.front.request.scan`: no name sent
   twice) and the framing (:func:`~commonroom.front.request.body_length`);
3. the door admits the request from its headers (``Door.admit``: the
   operation asked for);
4. one bearer check: ``Authorization: Bearer`` names a live session
   (``Engine.authenticate``, the session cache) holding the operation's
   capability (``Operation.authorize``);
5. one body reader (:func:`~commonroom.front.request.read_body`), when the
   door reads one; a client gone before its request began gets nothing;
6. the door says whether it can answer (``Door.ready``: a cache hit, a
   checked tool call);
7. one rate-limit count against the bearer, as the middleware counts;
8. the door's answer, sent by one sender.

Nothing was counted for a request passed to the app (the limiter records
no refused request), and the body messages read are given to it again,
so the app answers it as always. The Host rule ran at the room's edge
(``commonroom.http.edge``) before this.
"""

from __future__ import annotations

from typing import Any

from falcon.routing import CompiledRouter

from .. import tokens
from ..wire import bearer_of, counted
from .request import Door, Receive, Request, Send, body_length, read_body, replaying, scan

__all__ = ["FrontDoor"]


class FrontDoor:
    """ASGI wrapper of the ingress app (see the module docstring).

    ``app``: the ingress app; ``engine``: the room's engine (authenticate);
    ``limiter``: the ingress rate limiter (or None); ``routes``: path
    template → {method: door} (:func:`~commonroom.front.routes.front_routes`).
    ``served`` counts the requests answered here.
    """

    def __init__(self, app: Any, engine: Any, limiter: Any, routes: dict[str, dict[str, Door]]):
        self.app = app
        self.engine = engine
        self.limiter = limiter
        self.router = CompiledRouter()
        #: the templates without parameters, by path: found by one dict lookup before the router
        self.static = {path: doors for path, doors in routes.items() if "{" not in path}
        last = len(routes) - 1
        for number, (path, doors) in enumerate(routes.items()):
            # compiled now (Falcon's ``compile`` flag), not at the first request: at startup, not while serving
            self.router.add_route(path, doors, compile=number == last)
        self.methods = frozenset(method for doors in routes.values() for method in doors)
        self.served = 0

    def door(self, method: str, path: str) -> Door | None:
        """The door answering ``method`` ``path`` (a request path), if any."""
        found = self._route(method, path)
        return None if found is None else found[0]

    def _route(self, method: str, path: str) -> tuple[Door, dict[str, str]] | None:
        """``(door, path parameters)`` of ``method`` ``path``: one router lookup."""
        doors = self.static.get(path)
        if doors is not None:
            door = doors.get(method)
            return None if door is None else (door, {})
        found = self.router.find(path)
        if found is None:
            return None
        routed: dict[str, Door] = found[0]  # type: ignore[assignment]  # what front_routes added
        door = routed.get(method)
        return None if door is None else (door, found[2] or {})

    async def __call__(self, scope: dict[str, Any], receive: Receive, send: Send) -> None:  # noqa: D102 - ASGI
        routed = self._route(scope["method"], scope["path"]) \
            if scope["type"] == "http" and scope["method"] in self.methods and not scope["query_string"] else None
        scanned = None if routed is None else scan(scope["headers"])
        if scanned is None:
            await self.app(scope, receive, send)
            return
        door, params = routed  # type: ignore[misc]  # scanned is set with routed
        request = Request(scope, params, *scanned)
        length = body_length(request.headers, door)
        if length is None or not self._bearer(request, door):
            await self.app(scope, receive, send)
            return
        messages: list[dict[str, Any]] = []
        if door.reads_body:
            body = await read_body(receive, length, messages)
            if body is None:
                return  # the client left before the request began: nothing runs, nobody to answer
            request.body, request.complete = body, messages[-1]["type"] == "http.request"
        ticket = door.ready(request)
        if ticket is None or not counted(self.limiter, request.digest):  # past the limit: the app answers 429
            await self.app(scope, replaying(messages, receive) if messages else receive, send)
            return
        self.served += 1
        status, headers, data = await door.answer(request, ticket)
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": data})

    def _bearer(self, request: Request, door: Door) -> bool:
        """True when the door admits the request and its bearer is a live session holding the
        operation's capability (``request.op``, ``actor`` and ``digest`` set); any refusal, or a
        sidecar that cannot answer, is the app's to answer."""
        op = door.admit(request)
        authorization = request.authorization
        token = None if op is None or authorization is None else bearer_of(authorization.decode("latin-1"))
        if not token:
            return False
        digest = tokens.digest(token)
        try:
            actor = self.engine.authenticate(token, digest)
            op.authorize(actor)  # type: ignore[union-attr]  # op is set with token
        except Exception:
            return False
        request.op, request.actor, request.digest = op, actor, digest
        return True
