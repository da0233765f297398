"""The Falcon ASGI app of each listener of a room.

``create_app(engine, role)`` builds the app for one role: ``"ingress"`` (the
session ingress) or ``"owner"`` (127.0.0.1 only, the operator). Its routes
are derived from the operation table. Each request reached it through the
room's edge (:mod:`commonroom.http.edge`), which checked it once: the
app's router (:class:`CheckedRouter`) takes the edge's route and its
middleware (:class:`Admit`) the edge's decision.
"""

from __future__ import annotations

import logging
from typing import Any

import falcon
import falcon.asgi
from falcon.routing import CompiledRouter

from ..checked import CHECKED, ROUTE, checked_of
from ..engine import Engine
from ..errors import CommonroomError, InvalidRequest, NotFound
from ..operations import OPERATIONS, Table
from ..operations.runner import Runner
from ..wire import send_error, send_internal_error
from .openapi import published_routes
from .operations import operation_routes, stream_routes

log = logging.getLogger("commonroom.http")


class CheckedRouter(CompiledRouter):
    """Falcon's router, which takes the route the room's edge found (:class:`~commonroom.checked.Checked`).

    The edge (:class:`commonroom.http.edge.Listener`) looks the request's
    path up in this very router, once; Falcon's own lookup then returns
    that route from the scope. A request that did not pass the edge (a
    stack driven without it) is routed as Falcon routes it.
    """

    def find(self, uri: str, req: Any = None) -> Any:  # noqa: D102 - Falcon's router interface
        if req is not None:
            checked = req.scope.get(CHECKED)
            if checked is not None:
                return checked.route
        return super().find(uri, req)


class Admit:
    """Middleware: the edge's decision for a routed request (``req.context.actor``, its refusal raised).

    The edge decided the method, the bearer, the capability and the rate
    count (:mod:`commonroom.http.edge`); this raises its refusal, so Falcon's
    error handlers answer it, except to a resource that answers the bearer's
    refusals itself (``answers_refusals``: ``/mcp``, in JSON-RPC). A public
    resource was checked for its method only.
    """

    async def process_resource(self, req: falcon.asgi.Request, resp: falcon.asgi.Response, resource: Any,
                               params: dict[str, Any]) -> None:  # noqa: D102
        checked = checked_of(req.scope)
        req.context.actor = checked.actor
        if resource is None or checked.refusal is None or getattr(resource, "answers_refusals", False):
            return
        if getattr(resource, "public", False) and checked.stage != ROUTE:
            return  # checked.stage is BEARER only for a request that did not pass the edge
        raise checked.refusal


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
    extra_routes: dict[str, Any] | None = None,
    middleware: list[Any] | None = None,
    *,
    runner: Runner | None = None,
    table: Table = OPERATIONS,
    streams: dict[str, Any] | None = None,
    router: CheckedRouter | None = None,
) -> falcon.asgi.App:
    """The Falcon app for ``role`` (``"ingress"`` or ``"owner"``).

    Its routes are the operations of ``table`` served on that listener
    (:func:`commonroom.http.operations.operation_routes`, run by
    ``runner``), the published API (``/openapi.json``, ``/schema``) and
    ``extra_routes`` (``/mcp``, the console); ``streams`` maps each
    streaming operation's name to the resource serving it. ``router``: the
    router the listener's edge looks routes up in (a new one if None).
    """
    router = router if router is not None else CheckedRouter()
    app = falcon.asgi.App(middleware=[Admit(), *(middleware or [])], cors_enable=False, router=router)
    app.req_options.auto_parse_qs_csv = False
    app.req_options.keep_blank_qs_values = True
    app.resp_options.secure_cookies_by_default = True
    # every answer with a body names its own type; an empty one (202) names none
    app.resp_options.default_media_type = None  # type: ignore[assignment]
    routes: dict[str, Any] = dict(operation_routes(table, role, runner or Runner(engine)))
    routes.update(stream_routes(table, role, streams or {}))
    routes.update(published_routes(table, role))
    routes.update(extra_routes or {})
    last = len(routes) - 1
    for number, (path, resource) in enumerate(routes.items()):
        app.add_route(path, resource, compile=number == last)  # compiled at startup, not at the first request
    app.add_error_handler(Exception, _internal_error)
    app.add_error_handler(falcon.HTTPError, _http_error)
    app.add_error_handler(CommonroomError, _commonroom_error)
    return app
