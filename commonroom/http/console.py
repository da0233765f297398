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
from typing import Any, Awaitable, Callable

import falcon
import falcon.asgi

from ..errors import NotFound, PermissionDenied, Unauthorized
from ..operations.runner import Runner
from ..wire import send_error

#: The only state changes a console cookie may make (operation names): the operator's next steps
#: (docs/console.md, *What the console changes*). Invitations, revocation and the sidecar stay with ``ce``.
CONSOLE_MUTATIONS = frozenset({
    "post_session_message", "complete_session_message",
    "proposal_approve", "proposal_reject",
    "handoff_approve", "handoff_reject", "task_update",
    "lease_release",
})
SAFE_METHODS = frozenset({"GET", "HEAD"})
#: The page's Content-Security-Policy: nothing inline, nothing from elsewhere.
CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; "
       "base-uri 'none'; form-action 'self'; frame-ancestors 'none'")
#: The console's JavaScript: the helpers (console-kit.js, a classic script the participant page loads too) and
#: the modules: console.js (the entry the HTML loads) and the parts it imports (docs/console.md).
CONSOLE_SCRIPTS = ("console-kit.js", "console.js", "console-api.js", "console-document.js", "console-people.js",
                   "console-board.js")
_ASSETS = {**{name: "text/javascript; charset=utf-8" for name in CONSOLE_SCRIPTS},
           "console.css": "text/css; charset=utf-8",
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


def page_origins(req: falcon.asgi.Request) -> tuple[str, ...]:
    """The origins a console page may post from: the room's own, and the one the browser used.

    ``http://HOST`` of the request's ``Host`` header is the page's own origin
    when the console was opened as ``http://localhost:PORT`` or through
    ``ssh -L LOCAL:127.0.0.1:PORT`` on another local port. It can be
    trusted because the edge admits only loopback names on the owner port
    (``127.0.0.1``, ``localhost``, ``commonroom``; never a name a web page
    could rebind), and the cookie is ``SameSite=Strict``.
    """
    host = req.get_header("Host") or ""
    return (room_origin(req), f"http://{host}") if host else (room_origin(req),)


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
        if origin not in page_origins(req):
            raise PermissionDenied("the console refuses a state change from another origin: open the console "
                                   "at the address ce console printed (or through ssh -L with its path unchanged)",
                                   details={"reason": "cross_origin"})
        binding = getattr(resource, "bindings", {}).get(req.method)
        if binding is None or binding.op.name not in CONSOLE_MUTATIONS:
            raise PermissionDenied("the console may post, answer and complete on boards, decide proposals and "
                                   "handoffs, answer a task and break a lease; everything else stays with ce",
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


#: The page a browser gets for the console's own paths without a login (the API keeps its JSON error).
_SIGNED_OUT = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer"><title>{title} · commonroom console</title>
</head>
<body><main>
<h1>{title}</h1>
<p>{why}</p>
<p>For a new login link, run this beside the file on the room's machine, and open the link it prints:</p>
<pre><code>ce console {file}</code></pre>
<p>A login link works once, for 60 seconds. Through <code>ssh -L</code>, keep its path and
code and change only the port to your local one.</p>
</main></body></html>
"""


def _wants_page(req: falcon.asgi.Request) -> bool:
    """A browser navigating to the console (its ``Accept`` names HTML), not an API client."""
    return req.path in ("/console", "/console/login") and "text/html" in (req.get_header("Accept") or "")


def console_unauthorized(engine: Any) -> Callable[..., Awaitable[None]]:
    """The owner app's ``Unauthorized`` handler (see :func:`_unauthorized`), naming ``engine``'s file."""

    async def handler(req: falcon.asgi.Request, resp: falcon.asgi.Response, error: Unauthorized,
                      params: dict[str, Any]) -> None:
        _unauthorized(req, resp, error, engine.file_name)

    return handler


def _unauthorized(req: falcon.asgi.Request, resp: falcon.asgi.Response, error: Unauthorized, file: str) -> None:
    """``401``: an HTML page with the command to run for a browser on ``/console`` or a used/expired
    ``/console/login`` link; the usual JSON error envelope for everything else."""
    send_error(resp, error)
    if not _wants_page(req):
        return
    if req.path == "/console/login":
        title, why = "This login link cannot be used", ("It was already used, has expired (after 60 seconds) "
                                                         "or was cut short when it was copied.")
    else:
        title, why = "You are not logged in to this console", ("This browser has no console login for the "
                                                                "room, or it has ended (after 24 hours).")
    _headers(resp)
    resp.content_type = "text/html; charset=utf-8"
    resp.data = _SIGNED_OUT.format(title=html.escape(title), why=html.escape(why),
                                   file=html.escape(file)).encode("utf-8")


def console_routes(engine: Any, runner: Runner) -> dict[str, Any]:
    """The console's routes for the owner app."""
    return {
        "/console/login": ConsoleLogin(engine, runner),
        "/console": ConsolePage(engine),
        "/console/assets/{name}": ConsoleAsset(),
    }
