"""The room's front door: the requests answered before Falcon, from the operation table.

One ASGI wrapper of the session ingress app (:class:`~commonroom.front.door.FrontDoor`,
behind the room's edge, ``commonroom.http.edge``, which checked the request
once) answers three kinds of request itself when everything it needs is
known, each with exactly the answer the Falcon route or the MCP transport
gives (``tests/unit/test_front_*.py`` compare them byte for byte), and
passes every other request to the app untouched:

- a **cached read** (:mod:`~commonroom.front.reads`): ``GET`` of an
  operation declared ``Http(cache="head")`` without path parameters, from
  the answer cache its route fills;
- a **direct write** (:mod:`~commonroom.front.writes`): every operation
  that changes state (neither public nor a stream), run on the room's
  :class:`~commonroom.operations.runner.Runner` as its route runs it;
- a **cached tool call** (:mod:`~commonroom.front.toolcalls`): ``POST /mcp``
  ``tools/call`` of an operation declared ``Mcp(cache="head")``, from the
  dispatcher's cache of encoded results.

Which requests and how is derived from the table
(:func:`~commonroom.front.routes.front_routes`), as the routes are. The
route, the bearer, the capability and the rate count are the edge's
(:class:`~commonroom.checked.Checked`); the steps every door shares run
once, in the door: the framing, one body reader
(:mod:`~commonroom.front.request`), one answer sender. The front reads only
what gunicorn parsed: the ASGI scope and body.
"""

from .door import FrontDoor
from .routes import front_routes

__all__ = ["FrontDoor", "front_routes"]
