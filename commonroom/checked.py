"""What the room's edge decided about one request, for everything behind it to take.

The edge (:class:`commonroom.http.edge.Listener`) checks each request once,
in the order docs/hardening.md writes down (*One check per request*): the
Host and path rules, the route, the bearer, the capability, one rate
count. It leaves its decision in the ASGI scope as one :class:`Checked`
(under :data:`CHECKED`); Falcon's router and middleware, the front door and
the MCP endpoint read it there (:func:`checked_of`) and check nothing again.

A refusal is decided at the edge but *answered* where it always was, in the
shape of that place (a Falcon route's error envelope, a JSON-RPC error from
``/mcp``, the front door handing the request to the app), so each answer
keeps its bytes: :attr:`Checked.refusal` is the first refusal in the order,
:attr:`Checked.stage` names its step.

This module sits below the adapters (``http/``, ``mcp/`` and ``front/``
all read it) and imports none of them.
"""

from __future__ import annotations

from typing import Any, Mapping

from .errors import Unauthorized

__all__ = ["CHECKED", "Checked", "ROUTE", "BEARER", "CAPABILITY", "RATE", "checked_of"]

#: The scope key holding the request's :class:`Checked`.
CHECKED = "commonroom.checked"

#: :attr:`Checked.stage` of a refusal: the method is not one the route serves (405).
ROUTE = "route"
#: ... no live bearer: missing, unknown, revoked, expired; the owner token or console cookie on the owner port.
BEARER = "bearer"
#: ... the bearer lacks the operation's capability (403).
CAPABILITY = "capability"
#: ... the bearer is past its rate limit (429).
RATE = "rate"


class Checked:
    """The edge's decision about one request (see the module docstring).

    - ``route``: Falcon's route, ``(resource, method map, path parameters,
      path template)`` as :meth:`falcon.routing.CompiledRouter.find` gives
      it, or None (no route: Falcon answers 404);
    - ``op``: the operation of the table the route and method name, or None
      (a route that is not an operation: ``/mcp``, the published API, the
      console);
    - ``headers``: the request's headers by name (ASGI's lower case), values
      of a repeated name joined by ``,`` (as Falcon joins ``Authorization``),
      without ``Authorization`` (no secret is kept with them); read only;
      ``repeated``: some name was sent more than once (the front door then
      leaves the request to Falcon);
    - ``token_given``: the request carried a bearer token (valid or not);
    - ``actor``: the live session (or the operator) the bearer names, else
      None; ``digest``: the token's digest (the rate limit's key), or None;
    - ``refusal``: the first refusal of the order (an exception to raise
      where the request is answered), or None; ``stage``: its step
      (:data:`ROUTE`, :data:`BEARER`, :data:`CAPABILITY`, :data:`RATE`).

    Nothing after the first refusal was checked: a request refused for its
    bearer was not counted.
    """

    __slots__ = ("route", "op", "headers", "repeated", "token_given", "actor", "digest", "refusal", "stage")

    def __init__(self, route: tuple[Any, Any, dict[str, Any], str | None] | None, op: Any,
                 headers: dict[bytes, bytes], repeated: bool) -> None:
        self.route = route
        self.op = op
        self.headers = headers
        self.repeated = repeated
        self.token_given = False
        self.actor: Any = None
        self.digest: str | None = None
        self.refusal: Exception | None = None
        self.stage: str | None = None

    @property
    def template(self) -> str | None:
        """The route's path template, or None without a route."""
        return None if self.route is None else self.route[3]

    @property
    def params(self) -> dict[str, Any]:
        """The route's path parameters (empty without a route)."""
        return {} if self.route is None else self.route[2]

    def refuse(self, stage: str, error: Exception) -> None:
        """Record the refusal ``error`` at ``stage`` (the first one; the edge checks nothing after it)."""
        self.stage, self.refusal = stage, error

    def refused(self, *stages: str) -> Exception | None:
        """The refusal when it was made at one of ``stages``, else None."""
        return self.refusal if self.stage in stages else None


def _unchecked() -> Checked:
    """The decision for a request that did not pass the edge: no route, no bearer (fails closed)."""
    checked = Checked(None, None, {}, False)
    checked.refuse(BEARER, Unauthorized("the request did not pass the room's edge",
                                        details={"reason": "missing_bearer"}))
    return checked


def checked_of(scope: Mapping[str, Any]) -> Checked:
    """The edge's :class:`Checked` of the request of ``scope``; one that refuses every bearer when the
    request did not pass the edge (a stack driven without it serves nothing that needs a bearer)."""
    found = scope.get(CHECKED)
    return found if found is not None else _unchecked()
