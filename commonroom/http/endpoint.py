"""A tiny route → handler binding so each HTTP route is one plain function.

A handler is ``fn(call: Call) -> body`` or ``-> (status, body)``; it turns
the request into one engine call. :class:`Endpoint` does the rest:
authentication (``public`` routes skip it), body reading and validation
against the named schema, and JSON rendering. Errors propagate to the app's
error handler.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import falcon

from ..engine import Actor, Engine
from .wire import read_json, send


@dataclass
class Call:
    """What a handler sees: the engine, the actor, the query, body and path params."""

    engine: Engine
    actor: Actor | None
    query: dict[str, str]
    body: Any
    params: dict[str, str] = field(default_factory=dict)
    req: falcon.asgi.Request | None = None

    def arg(self, name: str, default: Any = None) -> Any:
        """A query parameter (last value wins)."""
        return self.query.get(name, default)


Handler = Callable[[Call], Any]


@dataclass
class Method:
    """One HTTP method of a route: its handler and what it takes and gives.

    ``schema`` names the request body's schema, ``answer`` the success
    body's (``"<file>#<Def>"``, see :mod:`commonroom.schemas`), ``status``
    the success status, ``capability`` what the session needs and
    ``summary`` one line for the published API description
    (:mod:`commonroom.http.openapi`). Only ``handler`` and ``schema`` change
    behaviour; the rest describes it.
    """

    handler: Handler
    schema: str | None = None
    answer: str | None = None
    status: int = 200
    capability: str | None = None
    summary: str = ""
    query: tuple[str, ...] = ()


class Endpoint:
    """A Falcon resource bound to handlers by method (``GET``/``POST``/…)."""

    def __init__(self, engine: Engine, *, public: bool = False, **methods: Method | Handler):
        self.engine = engine
        self.public = public
        self.methods = {
            name.upper(): m if isinstance(m, Method) else Method(m) for name, m in methods.items()
        }
        for name in self.methods:
            setattr(self, f"on_{name.lower()}", self._responder(name))

    def _responder(self, name: str):
        method = self.methods[name]

        async def responder(req: falcon.asgi.Request, resp: falcon.asgi.Response, **params: str) -> None:
            body = None
            if name in ("POST", "PUT", "PATCH", "DELETE"):
                body = await read_json(req, method.schema)
            call = Call(
                engine=self.engine,
                actor=req.context.get("actor"),
                query=dict(req.params),
                body=body,
                params=params,
                req=req,
            )
            result = method.handler(call)
            status = 200
            if isinstance(result, tuple):
                status, result = result
            send(resp, result, status)

        return responder
