"""The direct write: an operation that changes state, run as its route runs it.

:class:`DirectWrite` makes the body the operation's input
(:meth:`~commonroom.http.operations.Binding.from_body`,
:meth:`~commonroom.http.operations.Binding.with_path`: a bad body is the
same ``invalid_request``), runs it on the room's
:class:`~commonroom.operations.runner.Runner` (the one writer thread) and
renders its answer or its error as the route does
(:func:`~commonroom.wire.send`, :func:`~commonroom.wire.send_error`,
:func:`~commonroom.wire.send_internal_error` for a bug, logged).
A body longer than :data:`BODY_BYTES` (a whole document proposed) is the
route's.
"""

from __future__ import annotations

import logging

from ..errors import CommonroomError
from ..http.operations import Binding
from ..operations import Operation
from ..operations.runner import Runner
from ..wire import Rendered, send, send_error, send_internal_error
from .request import Answer, Request

__all__ = ["DirectWrite", "BODY_BYTES"]

log = logging.getLogger("commonroom.http")

#: The largest body answered here.
BODY_BYTES = 64 * 1024


class DirectWrite:
    """The door of one write (:class:`~commonroom.front.request.Door`): ``binding`` (its route's), ``runner``."""

    reads_body = True
    body_limit = BODY_BYTES

    def __init__(self, binding: Binding, runner: Runner):
        self.binding = binding
        self.runner = runner
        self.has_body = binding.http.has_body

    def admit(self, request: Request) -> Operation:  # noqa: D102 - Door
        return self.binding.op

    def ready(self, request: Request) -> bool:
        """Always (a bad body is this door's ``invalid_request``)."""
        return True

    async def answer(self, request: Request, ticket: bool) -> Answer:
        """The route's answer or error; a bug is logged with the method and path and answered 500."""
        binding, out = self.binding, Rendered()
        try:
            values = binding.from_body(request.body, request.params) if self.has_body \
                else binding.with_path({}, request.params)
            send(out, await self.runner.run(binding.op, request.actor, values), binding.http.status)
        except CommonroomError as error:
            send_error(out, error)
        except Exception:
            log.exception("%s %s failed", request.scope["method"], request.scope["path"])
            send_internal_error(out)
        return out.status, out.asgi_headers(), out.data
