"""The room's edge: the one layer that checks a request, outermost on every listener.

docs/hardening.md, *One check per request*. gunicorn parsed the request;
:class:`Edge` is the ASGI app it serves. It runs the lifespan, refuses a
WebSocket handshake, and gives every HTTP request to the :class:`Listener`
it arrived on (the owner port by its number, the session ingress for every
other socket), which reads the request's scope once and decides, in this
order, each step once:

1. the **Host and path rules** (:mod:`commonroom.http.rules`): a refusal
   is answered here, with the seed's error envelope, and the connection
   closed (nothing of the request was read, so it cannot be kept); nothing
   runs, nothing is counted, a console login code is not used up;
2. the **route**: Falcon's router for that listener, the operation table's
   path templates (:class:`~commonroom.http.app.CheckedRouter`), and the
   method the route serves (405 otherwise);
3. the **bearer**: on the ingress a live session (``Engine.authenticate``),
   on the owner port the owner token or a console cookie
   (:class:`~commonroom.http.console.ConsoleGate`); a public route has none;
4. the **capability** of the route's operation (``Operation.authorize``);
5. one **rate count** against the bearer (the ingress's limiter).

The decision is a :class:`~commonroom.checked.Checked` left in the scope;
the rest of the stack takes it: Falcon's router returns its route, the
middleware raises its refusal, the front door answers only what it admitted
(:mod:`commonroom.front`), ``/mcp`` answers its refusals as JSON-RPC
(:mod:`commonroom.mcp.endpoint`). Nothing behind the edge checks again.

**nosniff**: every answer of every listener carries
``X-Content-Type-Options: nosniff`` (:data:`NOSNIFF`); the worker's own
answers made before the app (``commonroom.worker``) carry it too.

**An answer that says ``Connection: close`` closes.** gunicorn decides
keep-alive from the request alone and writes the app's ``connection``
header as it is, so a connection the answer announced closed would go on
serving what the client pipelined behind (which a client trusting the
header retries: a write done twice). Whatever sent the header (the
refusals here, ``commonroom.bodyguard.BodyGuard`` for a body it did not
read), the listener raises :class:`CloseConnection` once that answer is
complete: an exception after a complete response is where ASGI servers
close the connection (gunicorn does, logging it at debug level).

The room serves no WebSocket: a handshake is refused (gunicorn answers it
``403`` with no body and closes), whatever its path or ``Host``.
"""

from __future__ import annotations

from typing import Any, Awaitable, Callable

import falcon.asgi

from .. import tokens
from ..checked import BEARER, CAPABILITY, CHECKED, RATE, ROUTE, Checked
from ..engine import OPERATOR
from ..errors import CommonroomError, MethodNotAllowed, Unauthorized
from ..operations import Operation, Table
from ..wire import Rendered, bearer_of, send_error
from .lifespan import Lifespan
from .rules import HostNames, host_refusal, target_refusal

__all__ = ["CloseConnection", "Edge", "Listener", "NOSNIFF", "allowed_methods"]

#: The header every answer carries.
NOSNIFF = (b"x-content-type-options", b"nosniff")
_CLOSE = (b"connection", b"close")
#: ``Host`` values kept as found to name the room (all forgotten when full).
SERVED_HOSTS = 64

Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]


class CloseConnection(Exception):
    """Raised by the edge after a complete answer that announced ``Connection: close``, so that the
    server closes the connection (see the module docstring)."""


def allowed_methods(resource: Any) -> tuple[str, ...]:
    """The HTTP methods ``resource`` serves (its ``allow``, else its ``on_*`` responders; never OPTIONS), sorted."""
    declared = getattr(resource, "allow", None)
    if declared:
        return tuple(declared)
    names = {name[3:].upper() for name in dir(resource) if name.startswith("on_") and callable(getattr(resource, name))}
    names.discard("OPTIONS")
    return tuple(sorted(names))


class Listener:
    """The checks of one listener, over the stack that answers it (an ASGI app; see the module docstring).

    ``role``: ``"ingress"`` or ``"owner"``; ``app``: what answers a
    checked request (the front door or Falcon's app, under the worker's
    ``BodyGuard`` when served); ``router``: the Falcon app's router (the
    same object: the route found here is the route Falcon serves);
    ``table``: the operation table (each route's operation). The bearer:
    ``engine`` (ingress sessions), ``owner_token_hash`` and ``console``
    (owner port); ``limiter``: the ingress's rate limiter (None: not
    counted). ``names``: the Host names (shared by a room's listeners).
    ``front``: the front door under ``app`` (:class:`~commonroom.front.FrontDoor`),
    asked first for an answer it makes from the checked headers alone (a cached
    read at the head), which is sent at once, past the layers between (None: none).
    ``refused`` counts the requests refused by the Host and path rules.
    """

    def __init__(self, role: str, app: Any, router: Any, table: Table, *, engine: Any = None,
                 owner_token_hash: str | None = None, console: Any = None, limiter: Any = None,
                 names: HostNames | None = None, front: Any = None):
        self.role = role
        self.app = app
        self.front = front
        self.router = router
        self.engine = engine
        self.owner_token_hash = owner_token_hash
        self.console = console
        self.limiter = limiter
        self.names = names or HostNames()
        #: (path template, method) → the operation served there
        self.ops: dict[tuple[str, str], Operation] = {
            (op.http.path, op.http.method): op for op in table.http(role) if op.http is not None}
        #: resource → (methods it serves, or None for any; public; answers the bearer's refusals itself)
        self._kinds: dict[int, tuple[tuple[str, ...] | None, bool, bool]] = {}
        self.refused = 0
        #: ``(Host value, the listener's names)`` found to name the room (a client sends the same one each time)
        self._served: set[tuple[bytes, frozenset[str]]] = set()
        #: path → its route, for the routes without path parameters (see :meth:`_route`)
        self._static: dict[str, Any] = {}

    async def __call__(self, scope: dict[str, Any], receive: Receive, send: Send) -> None:  # noqa: D102 - ASGI
        raw = scope["headers"]
        headers: dict[bytes, bytes] = dict(raw)  # the one reading of the headers
        repeated = len(headers) < len(raw)
        if repeated:  # a name sent twice: its values joined as Falcon joins them
            headers = {}
            for name, value in raw:
                headers[name] = headers[name] + b"," + value if name in headers else value
            hosts = [value for name, value in raw if name == b"host"]
        else:
            host = headers.get(b"host")
            hosts = [] if host is None else [host]
        names = self.names.of(scope.get("server"))
        served = len(hosts) == 1 and (hosts[0], names) in self._served
        error = target_refusal(scope) or (None if served else host_refusal(hosts, scope.get("http_version"), names))
        if error is None and not served and len(hosts) == 1:
            if len(self._served) >= SERVED_HOSTS:
                self._served.clear()
            self._served.add((hosts[0], names))
        if error is not None:
            self.refused += 1
            out = Rendered()
            send_error(out, error)
            await send({"type": "http.response.start", "status": out.status,
                        "headers": [*out.asgi_headers(), NOSNIFF, _CLOSE]})
            await send({"type": "http.response.body", "body": out.data})
            raise CloseConnection(f"refused at the edge: {error.code} {error.status}")
        authorization = headers.pop(b"authorization", None)
        checked = Checked(self._route(scope["path"] or "/"), None, headers, repeated)
        scope[CHECKED] = checked
        self.check(checked, scope, receive, authorization)
        if self.front is not None and checked.refusal is None:
            ready = self.front.at_once(scope, checked)
            if ready is not None:  # its head carries nosniff, and never Connection: close
                await send({"type": "http.response.start", "status": ready[0], "headers": ready[1]})
                await send({"type": "http.response.body", "body": ready[2]})
                return
        closing = False

        async def send_nosniff(message: dict[str, Any]) -> None:
            nonlocal closing
            if message["type"] == "http.response.start":  # a new message: an app may reuse its own
                headers = message.get("headers", ())
                closing = _CLOSE in headers
                message = {**message, "headers": [*headers, NOSNIFF]}
            await send(message)

        await self.app(scope, receive, send_nosniff)
        if closing:
            raise CloseConnection("the answer said Connection: close")

    def _route(self, path: str) -> Any:
        """The router's route of ``path``; a route without path parameters is kept by its path (one dict
        lookup the next time; the templates without parameters are few and fixed)."""
        found = self._static.get(path)
        if found is None:
            found = self.router.find(path)
            if found is not None and not found[2] and found[3] == path:
                self._static[path] = found
        return found

    def check(self, checked: Checked, scope: dict[str, Any], receive: Receive, authorization: bytes | None) -> None:
        """Steps 2 to 5 (the route, the bearer, the capability, the rate count), into ``checked``."""
        route = checked.route
        if route is None:
            return  # no route: Falcon's 404
        resource, method = route[0], scope["method"]
        allowed, public, answers_refusals = self._kind(resource)
        if allowed is not None and method not in allowed:
            checked.refuse(ROUTE, MethodNotAllowed(f"{scope['path'] or '/'} answers {', '.join(allowed)}, "
                                                   f"not {method}", details={"allowed": list(allowed)}))
            return
        if public and not answers_refusals:
            return
        token = bearer_of(authorization.decode("latin-1")) if authorization else None
        checked.token_given = token is not None
        try:
            if self.role == "owner":
                checked.actor = self._operator(token, scope, receive, resource)
            else:
                checked.digest = tokens.digest(token) if token else None
                checked.actor = self.engine.authenticate(token, checked.digest)
        except Exception as error:  # a refusal, or a sidecar that cannot answer (raised where answered)
            checked.refuse(BEARER, error)
            return
        op = checked.op = self.ops.get((route[3] or "", method))
        if op is not None:
            try:
                op.authorize(checked.actor)
            except CommonroomError as error:
                checked.refuse(CAPABILITY, error)
                return
        if self.limiter is not None and checked.digest:
            try:
                self.limiter.hit(checked.digest)
            except CommonroomError as error:
                checked.refuse(RATE, error)

    def _kind(self, resource: Any) -> tuple[tuple[str, ...] | None, bool, bool]:
        """``(methods served or None, public, answers the bearer's refusals itself)`` of ``resource``, once."""
        kind = self._kinds.get(id(resource))
        if kind is None:
            allowed = None if getattr(resource, "handles_any_method", False) else allowed_methods(resource)
            kind = self._kinds[id(resource)] = (allowed, bool(getattr(resource, "public", False)),
                                                bool(getattr(resource, "answers_refusals", False)))
        return kind

    def _operator(self, token: str | None, scope: dict[str, Any], receive: Receive, resource: Any) -> Any:
        """The owner port's bearer: the owner token, or (without one) a console cookie; ``Unauthorized`` else."""
        if not token and self.console is not None and self.console.admits(falcon.asgi.Request(scope, receive),
                                                                           resource):
            return OPERATOR  # the console cookie (commonroom.http.console.ConsoleGate)
        if not token or not self.owner_token_hash or not tokens.matches(token, self.owner_token_hash):
            raise Unauthorized("the owner port needs the owner token (or a console login: ce console FILE)",
                               details={"reason": "owner_token"})
        return OPERATOR


class Edge:
    """The ASGI app gunicorn serves: the lifespan, no WebSocket, each request to its :class:`Listener`.

    ``owner``: the owner port's listener, for requests arriving on
    ``owner_port``; ``ingress``: the session ingress's, for every other
    socket (the loopback ingress, the Unix socket, a transport plugin's).
    ``lifespan``: the room's startup and shutdown hooks.
    """

    def __init__(self, owner: Listener, ingress: Listener, owner_port: int, lifespan: Lifespan):
        self.owner = owner
        self.ingress = ingress
        self.owner_port = owner_port
        self.lifespan = lifespan
        self.refused = 0  # WebSocket handshakes

    async def __call__(self, scope: dict[str, Any], receive: Receive, send: Send) -> None:  # noqa: D102 - ASGI
        kind = scope["type"]
        if kind == "http":
            server = scope.get("server") or (None, None)
            await (self.owner if server[1] == self.owner_port else self.ingress)(scope, receive, send)
        elif kind == "websocket":
            self.refused += 1
            await receive()  # websocket.connect
            await send({"type": "websocket.close", "code": 1008})  # before accept: the server's 403
        elif kind == "lifespan":
            await self.lifespan.run(receive, send)
