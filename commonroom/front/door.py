"""The front door of the session ingress: one ASGI wrapper answering what the table lets it.

:class:`FrontDoor` wraps the ingress app (see :mod:`commonroom.front`).
The room's edge (``commonroom.http.edge``) checked the request before it:
the Host and path rules, the route, the bearer, the capability and the
rate count, once (:class:`~commonroom.checked.Checked`). For a request the
edge admitted, with no query string, whose route and method name a door of
:func:`~commonroom.front.routes.front_routes`, the door runs, in this order,
and passes the request to the app as soon as a step says no:

1. the framing (:func:`~commonroom.front.request.body_length`; no header
   name sent twice);
2. the door admits the request from its headers (``Door.admit``: the
   operation asked for; a tool call's capability, which the route does
   not name, is checked here);
3. one body reader (:func:`~commonroom.front.request.read_body`), when the
   door reads one; a client gone before its request began gets nothing;
4. the door says whether it can answer (``Door.ready``: a cache hit, a
   checked tool call);
5. the door's answer, sent by one sender.

The body messages read are given to the app again, so the app answers a
request passed to it as always; the edge counted it once either way. A
request the edge refused goes to the app, which answers the refusal.
"""

from __future__ import annotations

from typing import Any

from ..checked import CHECKED, Checked
from .reads import CachedRead
from .request import Answer, Door, Receive, Request, Send, body_length, read_body, replaying

__all__ = ["FrontDoor"]


class FrontDoor:
    """ASGI wrapper of the ingress app (see the module docstring).

    ``app``: the ingress app; ``routes``: path template → {method: door}
    (:func:`~commonroom.front.routes.front_routes`). ``served`` counts the
    requests answered here.
    """

    def __init__(self, app: Any, routes: dict[str, dict[str, Door]]):
        self.app = app
        self.routes = routes
        self.served = 0
        #: path template → the door of its ``GET`` that answers from the headers alone (:meth:`at_once`)
        self._at_once: dict[str, CachedRead] = {
            template: door for template, doors in routes.items() if isinstance(door := doors.get("GET"), CachedRead)}

    def at_once(self, scope: dict[str, Any], checked: Checked) -> Answer | None:
        """The answer to a request the edge admitted whose door needs nothing but its headers (a cached
        read at the head), nosniff included, for the edge to send as it is; None: the request goes
        through the stack as any other (this door included, which then answers it or passes it on).

        The conditions of :meth:`__call__` (:meth:`_eligible`), and a ``GET`` with no body at all (neither
        ``Content-Length`` nor ``Transfer-Encoding``) whose route's operation is the one the edge checked.
        """
        if scope["method"] != "GET" or not self._eligible(scope, checked):
            return None
        door = self._at_once.get(checked.template or "")
        headers = checked.headers
        if door is None or door.op is not checked.op or b"content-length" in headers \
                or b"transfer-encoding" in headers:
            return None
        answer = door.at_once(headers)
        if answer is not None:
            self.served += 1
        return answer

    def door(self, method: str, template: str) -> Door | None:
        """The door answering ``method`` on the route of path template ``template``, if any."""
        return self.routes.get(template, {}).get(method)

    async def __call__(self, scope: dict[str, Any], receive: Receive, send: Send) -> None:  # noqa: D102 - ASGI
        checked: Checked | None = scope.get(CHECKED)
        door = None
        if checked is not None and self._eligible(scope, checked):
            doors = self.routes.get(checked.template or "")
            door = None if doors is None else doors.get(scope["method"])
        if door is None or checked is None:
            await self.app(scope, receive, send)
            return
        request = Request(scope, checked.params, checked.headers)
        length = body_length(request.headers, door)
        if length is None or not self._admit(request, door, checked):
            await self.app(scope, receive, send)
            return
        messages: list[dict[str, Any]] = []
        if door.reads_body:
            body = await read_body(receive, length, messages)
            if body is None:
                return  # the client left before the request began: nothing runs, nobody to answer
            request.body, request.complete = body, messages[-1]["type"] == "http.request"
        ticket = door.ready(request)
        if ticket is None:
            await self.app(scope, replaying(messages, receive) if messages else receive, send)
            return
        self.served += 1
        status, headers, data = await door.answer(request, ticket)
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": data})

    @staticmethod
    def _eligible(scope: dict[str, Any], checked: Checked) -> bool:
        """Whether a door may answer the request at all: the edge admitted it with a live bearer, no
        header came twice, and it has no query string (every door's route reads none)."""
        return checked.refusal is None and checked.actor is not None and not checked.repeated \
            and not scope["query_string"]

    @staticmethod
    def _admit(request: Request, door: Door, checked: Checked) -> bool:
        """True when the door admits the request (``request.op``, ``actor`` and ``digest`` set): the
        route's operation, or a tool the caller's session holds the capability of."""
        op = door.admit(request)
        if op is None:
            return False
        if op is not checked.op:  # a tool call's tool: the route (/mcp) names no operation
            try:
                op.authorize(checked.actor)
            except Exception:
                return False
        request.op, request.actor, request.digest = op, checked.actor, checked.digest or ""
        return True
