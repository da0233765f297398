"""The room console on the owner port: login, the page, its assets, and the cookie gate.

- ``GET /console/login?code=…`` (public) redeems a one-time code from
  ``ce console FILE`` (:meth:`commonroom.engine.console.ConsoleMixin.console_redeem`)
  for a cookie (``HttpOnly; SameSite=Strict; Path=/``, named after the
  owner port) and redirects (303) to the clean ``/console``.
- ``GET /console`` is the page (HTML with the room's name filled in);
  ``GET /console/assets/{name}`` its JavaScript and CSS (package data,
  ``commonroom/static/console/``). Both need the cookie or the owner bearer.
- :class:`ConsoleGate` is how the owner app's authentication admits the
  cookie on every owner route: a cookie request that changes state must
  come from the room's exact origin (``http://127.0.0.1:PORT``, never the
  request's ``Host``) and may only call the console's mutations
  (:data:`CONSOLE_MUTATIONS`).

The page reads the operations' answers over the owner port, like any
other client: no business logic lives here.
"""

from __future__ import annotations

import html
from importlib import resources
from typing import Any

import falcon
import falcon.asgi

from ..errors import NotFound, PermissionDenied
from ..operations.runner import Runner

#: The only state changes a console cookie may make (operation names).
CONSOLE_MUTATIONS = frozenset({"post_session_message", "proposal_approve", "proposal_reject"})
SAFE_METHODS = frozenset({"GET", "HEAD"})
#: The page's Content-Security-Policy: nothing inline, nothing from elsewhere.
CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; "
       "base-uri 'none'; form-action 'self'; frame-ancestors 'none'")
_ASSETS = {"console.js": "text/javascript; charset=utf-8", "console.css": "text/css; charset=utf-8",
           "favicon.svg": "image/svg+xml"}


def _port(req: falcon.asgi.Request) -> int:
    """The port the request arrived on (the socket's, never the ``Host`` header)."""
    server = req.scope.get("server") or ("127.0.0.1", 0)
    return int(server[1] or 0)


def cookie_name(req: falcon.asgi.Request) -> str:
    """The console cookie's name on this port (cookies do not isolate ports; names do)."""
    return f"commonroom_console_{_port(req)}"


def room_origin(req: falcon.asgi.Request) -> str:
    """The exact origin the owner port serves: ``http://127.0.0.1:PORT``."""
    return f"http://127.0.0.1:{_port(req)}"


def _headers(resp: falcon.asgi.Response) -> None:
    resp.set_header("Content-Security-Policy", CSP)
    resp.set_header("Referrer-Policy", "no-referrer")
    resp.set_header("Cache-Control", "no-store")
    resp.set_header("X-Frame-Options", "DENY")


def _asset(name: str) -> bytes:
    return resources.files("commonroom").joinpath("static", "console", name).read_bytes()


class ConsoleGate:
    """Admits a console cookie on the owner port (see the module docstring)."""

    def __init__(self, engine: Any):
        self.engine = engine

    def admits(self, req: falcon.asgi.Request, resource: Any) -> bool:
        """True when the request carries a live console cookie and may do what it asks.

        A cookie request that changes state from another origin, or calls
        anything but :data:`CONSOLE_MUTATIONS`, is ``PermissionDenied``.
        """
        values = req.get_cookie_values(cookie_name(req)) or []
        if not values or not self.engine.console_admits(values[0]):
            return False
        if req.method in SAFE_METHODS:
            return True
        origin = req.get_header("Origin")
        if origin != room_origin(req):
            raise PermissionDenied("the console refuses a state change from another origin",
                                   details={"reason": "cross_origin"})
        binding = getattr(resource, "bindings", {}).get(req.method)
        if binding is None or binding.op.name not in CONSOLE_MUTATIONS:
            raise PermissionDenied("the console may only post board messages and approve or reject proposals",
                                   details={"reason": "console_mutation"})
        return True


class ConsoleLogin:
    """``GET /console/login?code=…``: the one-time code for a cookie, then ``/console``."""

    public = True

    def __init__(self, engine: Any, runner: Runner):
        self.engine = engine
        self.runner = runner

    async def on_get(self, req: falcon.asgi.Request, resp: falcon.asgi.Response) -> None:
        """Redeem the code (``unauthorized`` when unknown, used or expired)."""
        code = req.get_param("code") or ""
        cookie, max_age = await self.runner.write(self.engine.console_redeem, code)
        resp.set_cookie(cookie_name(req), cookie, max_age=max_age, path="/", secure=False, http_only=True,
                        same_site="Strict")
        _headers(resp)
        resp.status = falcon.HTTP_303
        resp.set_header("Location", "/console")


class ConsolePage:
    """``GET /console``: the page, with the room's file name and workspace id (escaped)."""

    def __init__(self, engine: Any):
        self.engine = engine

    async def on_get(self, req: falcon.asgi.Request, resp: falcon.asgi.Response) -> None:
        """The HTML page (the cookie or the owner bearer)."""
        page = _asset("console.html").decode("utf-8")
        page = page.replace("{{file}}", html.escape(self.engine.file_name))
        page = page.replace("{{workspace}}", html.escape(self.engine.workspace_id))
        _headers(resp)
        resp.content_type = "text/html; charset=utf-8"
        resp.data = page.encode("utf-8")


class ConsoleAsset:
    """``GET /console/assets/{name}``: the page's JavaScript and CSS."""

    async def on_get(self, req: falcon.asgi.Request, resp: falcon.asgi.Response, name: str) -> None:
        """One asset by name (``not_found`` for any other name)."""
        if name not in _ASSETS:
            raise NotFound(f"no console asset {name}", details={"path": req.path})
        _headers(resp)
        resp.content_type = _ASSETS[name]
        resp.data = _asset(name)


def console_routes(engine: Any, runner: Runner) -> dict[str, Any]:
    """The console's routes for the owner app."""
    return {
        "/console/login": ConsoleLogin(engine, runner),
        "/console": ConsolePage(engine),
        "/console/assets/{name}": ConsoleAsset(),
    }
