"""The participant page on the session ingress: ``GET /`` and its assets.

A person opens ``http://ADDR:PORT/`` (the loopback ingress, or a plugin
listener such as the overlay) with an invitation link from ``ce invite
… --link`` (the invitation in the URL's fragment, which no server sees)
or pastes a ``commonroom://join/…`` token. The page is plain HTML,
JavaScript and CSS shipped as package data (``commonroom/static/participant/``,
no build step, nothing from elsewhere) and calls the same operations as
every client with the session's bearer in an ``Authorization`` header:
it holds no authority of its own and no business logic lives here
(docs/web.md).

Both routes are public (the page and its assets hold nothing secret) and
answer with the console's strict headers
(:data:`commonroom.http.console.CSP`: no inline script or style, nothing
from another origin).
"""

from __future__ import annotations

from importlib import resources
from typing import Any

import falcon
import falcon.asgi

from ..errors import NotFound
from .console import CSP

#: The page's JavaScript modules: page.js (the entry the HTML loads) and the parts it imports (docs/web.md).
PAGE_SCRIPTS = ("page.js", "page-api.js", "page-document.js", "page-proposals.js", "page-versions.js",
                "page-handoffs.js", "page-boards.js", "page-live.js")
_ASSETS = {**{name: ("participant", "text/javascript; charset=utf-8") for name in PAGE_SCRIPTS},
           "page.css": ("participant", "text/css; charset=utf-8"),
           "console-kit.js": ("console", "text/javascript; charset=utf-8"),  # the helpers both pages share
           "favicon.svg": ("console", "image/svg+xml")}


def _headers(resp: falcon.asgi.Response) -> None:
    resp.set_header("Content-Security-Policy", CSP)
    resp.set_header("Referrer-Policy", "no-referrer")
    resp.set_header("Cache-Control", "no-store")
    resp.set_header("X-Frame-Options", "DENY")


def _read(folder: str, name: str) -> bytes:
    return resources.files("commonroom").joinpath("static", folder, name).read_bytes()


class ParticipantPage:
    """``GET /``: the participant page (public; the bearer lives in the tab, never in a cookie)."""

    public = True

    async def on_get(self, req: falcon.asgi.Request, resp: falcon.asgi.Response) -> None:
        """The HTML page."""
        _headers(resp)
        resp.content_type = "text/html; charset=utf-8"
        resp.data = _read("participant", "index.html")


class ParticipantAsset:
    """``GET /assets/{name}``: the page's JavaScript, CSS and icon (public)."""

    public = True

    async def on_get(self, req: falcon.asgi.Request, resp: falcon.asgi.Response, name: str) -> None:
        """One asset by name (``not_found`` for any other name)."""
        if name not in _ASSETS:
            raise NotFound(f"no page asset {name}", details={"path": req.path})
        folder, kind = _ASSETS[name]
        _headers(resp)
        resp.content_type = kind
        resp.data = _read(folder, name)


def participant_routes() -> dict[str, Any]:
    """The participant page's routes for the ingress app (every listener of the session ingress)."""
    return {"/": ParticipantPage(), "/assets/{name}": ParticipantAsset()}
