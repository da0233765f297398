"""A ``ce`` command calls an operation by name: its route comes from the operation table.

``python -m codegen`` stores each operation's HTTP binding
(:class:`commonroom.operations.spec.Http`) into :data:`ROUTES_FILE`,
package data beside this module (``python -m codegen --check`` fails when
it differs from the table), so a command neither writes a ``/workspace/…``
path and method by hand nor imports the table (and the engine under it)
at start-up: ``ce read`` stays fast. :func:`request` turns an
operation's input object into the request the room's HTTP adapter reads
back as that same object (:mod:`commonroom.http.operations`): path
parameters in the path, the rest in the query (``GET``, ``DELETE``; JSON
text for the parameters the adapter reads as JSON) or as the JSON body.
This module imports no Typer.
"""

from __future__ import annotations

import json
import os
from functools import lru_cache
from typing import Any
from urllib.parse import quote, urlencode

from ..errors import InvalidRequest

#: The stored routes: ``{operation: {"method", "path", "aliases", "json"}}``: ``aliases`` maps a wire name to
#: its input property (``Http.aliases``), ``json`` lists the query properties read as JSON text.
ROUTES_FILE = "routes.json"


@lru_cache(maxsize=1)
def routes() -> dict[str, Any]:
    """The stored routes (:data:`ROUTES_FILE`), read once."""
    with open(os.path.join(os.path.dirname(__file__), ROUTES_FILE), encoding="utf-8") as file:
        loaded: dict[str, Any] = json.load(file)
    return loaded


def request(operation: str, values: dict[str, Any] | None = None) -> tuple[str, str, Any]:
    """``(method, path with its query, JSON body or None)`` calling ``operation`` with the input ``values``.

    A body carries ``values`` as given (a None is JSON null: ``"region":
    null`` is the whole document); in a path or a query a None is left out
    (a query cannot say null). Raises ``KeyError`` for an operation without
    an HTTP route, ``InvalidRequest`` for a path parameter holding ``/`` or
    ``\\`` (no id does; the room would refuse its percent-encoding).
    """
    route = routes()[operation]
    rest = dict(values or {})
    wire_of = {prop: wire for wire, prop in route["aliases"].items()}
    path: str = route["path"]
    for prop in list(rest):
        wire = wire_of.get(prop, prop)
        if "{" + wire + "}" in path:
            value = rest.pop(prop)
            if value is not None and any(c in str(value) for c in "/\\"):
                raise InvalidRequest(f"{wire} {str(value)!r}: no id holds a '/' or '\\'; give it as ce printed it",
                                     details={"parameter": wire})
            path = path.replace("{" + wire + "}", quote(str(value), safe="") if value is not None else "")
    if route["method"] in ("POST", "PUT", "PATCH"):
        return route["method"], path, rest
    query = [(wire_of.get(prop, prop), json.dumps(value) if prop in route["json"] else str(value))
             for prop, value in rest.items() if value is not None]
    return route["method"], path + (f"?{urlencode(query)}" if query else ""), None
