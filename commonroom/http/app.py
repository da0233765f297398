"""The Falcon ASGI apps of a room and the dispatcher between its two listeners.

``create_app(engine, role, owner_token_hash)`` builds the app for one role:

- ``"ingress"``: the session ingress; bearer = a session token.
- ``"owner"``: 127.0.0.1 only; bearer = the owner token (the operator).

:class:`RoomASGI` is the ASGI callable gunicorn serves: it sends each
connection to the owner app when it arrived on the owner port, else to the
ingress app, and runs the lifespan (closing live streams on shutdown).
"""

from __future__ import annotations

import logging
from typing import Any, Callable

import falcon
import falcon.asgi

from .. import tokens
from ..engine import OPERATOR, Engine
from ..errors import CommonroomError, InvalidRequest, MethodNotAllowed, NotFound, Unauthorized
from ..limits import RateLimiter
from ..operations import OPERATIONS, Table
from ..operations.runner import Runner
from ..wire import bearer, count_request, send_error, send_internal_error
from .openapi import published_routes
from .operations import operation_routes, stream_routes

log = logging.getLogger("commonroom.http")


class Authenticate:
    """Middleware: sets ``req.context.actor`` for every non-public route.

    On the session ingress each authenticated request also counts against
    its bearer's rate limit (``commonroom.limits``: 600 a minute, keyed by
    the token's hash), raising ``LimitExceeded`` (429) past it; an event
    stream is one request. ``req.context.limiter`` is that limiter, for a
    public resource that authenticates by itself (``/mcp``) to count its
    requests the same way: ``limiter.hit(tokens.digest(token))``.
    """

    def __init__(self, engine: Engine, role: str, owner_token_hash: str | None,
                 limiter: RateLimiter | None = None, console: Any = None):
        self.engine = engine
        self.role = role
        self.owner_token_hash = owner_token_hash
        self.limiter = limiter
        self.console = console

    async def process_resource(self, req: falcon.asgi.Request, resp: falcon.asgi.Response, resource: Any,
                               params: dict[str, Any]) -> None:  # noqa: D102
        req.context.actor = None
        req.context.limiter = self.limiter
        if resource is not None and not getattr(resource, "handles_any_method", False):
            allowed = allowed_methods(resource)
            if req.method not in allowed:
                raise MethodNotAllowed(f"{req.path} answers {', '.join(allowed)}, not {req.method}",
                                       details={"allowed": list(allowed)})
        if resource is None or getattr(resource, "public", False):
            return
        token = bearer(req)
        if self.role == "owner":
            if not token and self.console is not None and self.console.admits(req, resource):
                req.context.actor = OPERATOR  # the console cookie (commonroom.http.console.ConsoleGate)
                return
            if not token or not self.owner_token_hash or not tokens.matches(token, self.owner_token_hash):
                raise Unauthorized("the owner port needs the owner token (or a console login: ce console FILE)",
                                   details={"reason": "owner_token"})
            req.context.actor = OPERATOR
            return
        digest = tokens.digest(token) if token else None  # once: the session cache and the limiter key
        req.context.actor = self.engine.authenticate(token, digest)
        count_request(self.limiter, token, digest)


def allowed_methods(resource: Any) -> tuple[str, ...]:
    """The HTTP methods ``resource`` serves (its ``on_*`` responders; never OPTIONS), sorted."""
    declared = getattr(resource, "allow", None)
    if declared:
        return tuple(declared)
    names = {name[3:].upper() for name in dir(resource) if name.startswith("on_") and callable(getattr(resource, name))}
    names.discard("OPTIONS")
    return tuple(sorted(names))


async def _commonroom_error(req: falcon.asgi.Request, resp: falcon.asgi.Response, error: CommonroomError,
                            params: dict[str, Any]) -> None:
    send_error(resp, error)


async def _internal_error(req: falcon.asgi.Request, resp: falcon.asgi.Response, error: Exception,
                          params: dict[str, Any]) -> None:
    """A bug: logged with its traceback, answered 500 with one body whatever the ``Accept`` (as the
    writes answered before Falcon, :mod:`commonroom.front.writes`)."""
    log.error("%s %s failed", req.method, req.path, exc_info=error)
    send_internal_error(resp)


async def _http_error(req: falcon.asgi.Request, resp: falcon.asgi.Response, error: falcon.HTTPError,
                      params: dict[str, Any]) -> None:
    if error.status_code == 404:
        send_error(resp, NotFound(f"no route {req.method} {req.path}", details={"path": req.path}))
        return
    wrapped = InvalidRequest(error.title or "bad request", details={"description": error.description or ""})
    send_error(resp, wrapped)
    resp.status = error.status_code
    for name, value in dict(error.headers or {}).items():
        resp.set_header(name, value)


def create_app(
    engine: Engine,
    role: str,
    owner_token_hash: str | None = None,
    extra_routes: dict[str, Any] | None = None,
    middleware: list[Any] | None = None,
    limiter: RateLimiter | None = None,
    *,
    runner: Runner | None = None,
    table: Table = OPERATIONS,
    streams: dict[str, Any] | None = None,
    console: Any = None,
) -> falcon.asgi.App:
    """The Falcon app for ``role`` (``"ingress"`` or ``"owner"``).

    Its routes are the operations of ``table`` served on that listener
    (:func:`commonroom.http.operations.operation_routes`, run by
    ``runner``), the published API (``/openapi.json``, ``/schema``) and
    ``extra_routes`` (``/mcp``); ``streams`` maps each streaming
    operation's name to the resource serving it. ``limiter`` rate-limits
    authenticated requests (the ingress passes one; the owner port, the
    local operator, is not limited). ``console`` (a
    :class:`commonroom.http.console.ConsoleGate`, owner app only) also
    admits the console cookie.
    """
    app = falcon.asgi.App(
        middleware=[Authenticate(engine, role, owner_token_hash, limiter, console), *(middleware or [])],
        cors_enable=False,
    )
    app.req_options.auto_parse_qs_csv = False
    app.req_options.keep_blank_qs_values = True
    app.resp_options.secure_cookies_by_default = True
    # every answer with a body names its own type; an empty one (202) names none
    app.resp_options.default_media_type = None  # type: ignore[assignment]
    routes: dict[str, Any] = dict(operation_routes(table, role, runner or Runner(engine)))
    routes.update(stream_routes(table, role, streams or {}))
    routes.update(published_routes(table, role))
    routes.update(extra_routes or {})
    for path, resource in routes.items():
        app.add_route(path, resource)
    app.add_error_handler(Exception, _internal_error)
    app.add_error_handler(falcon.HTTPError, _http_error)
    app.add_error_handler(CommonroomError, _commonroom_error)
    return app


class RoomASGI:
    """ASGI entry: route by listener port; run the lifespan.

    ``on_startup`` callables run (awaited if coroutines) when the worker
    starts (the room timers); one that fails fails the startup, so the
    worker does not serve. ``on_shutdown`` callables run (awaited if
    coroutines) when the worker stops.
    """

    def __init__(self, owner_app: Callable, ingress_app: Callable, owner_port: int,
                 on_shutdown: list[Callable] | None = None, on_startup: list[Callable] | None = None):
        self.owner_app = owner_app
        self.ingress_app = ingress_app
        self.owner_port = owner_port
        self.on_shutdown = on_shutdown or []
        self.on_startup = on_startup or []

    async def __call__(self, scope: dict[str, Any], receive: Callable[..., Any],
                       send: Callable[..., Any]) -> None:  # noqa: D102
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        server = scope.get("server") or (None, None)
        app = self.owner_app if server[1] == self.owner_port else self.ingress_app
        await app(scope, receive, send)

    async def _lifespan(self, receive: Callable[..., Any], send: Callable[..., Any]) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                try:
                    for hook in self.on_startup:
                        result = hook()
                        if hasattr(result, "__await__"):
                            await result
                except Exception as exc:
                    log.exception("startup hook failed")
                    await send({"type": "lifespan.startup.failed", "message": repr(exc)})
                    return
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                for hook in self.on_shutdown:
                    try:
                        result = hook()
                        if hasattr(result, "__await__"):
                            await result
                    except Exception:  # a failing hook must not stop shutdown
                        log.exception("shutdown hook failed")
                await send({"type": "lifespan.shutdown.complete"})
                return
