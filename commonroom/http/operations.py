"""HTTP routes derived from the operation table (:mod:`commonroom.operations`).

:func:`operation_routes` turns every operation served on a listener into a
Falcon resource: path parameters, query parameters (typed by the input
schema: an integer is ASCII digits only, with its bounds; an object is
JSON text) and the JSON body become the operation's one input object,
which is validated against the operation's input schema before the
engine is called through the :class:`~commonroom.operations.runner.Runner`.
A failure names the parameter (``details.parameter``) or the body's JSON
pointer (``details.pointer``).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any
from weakref import WeakKeyDictionary

import falcon
import falcon.asgi

from .. import jsontext, numbers, schemas
from ..bundle import bundle
from ..errors import InvalidRequest
from ..operations import Operation, Table
from ..operations.runner import Runner
from ..wire import parse_json, read_body, send
from .answers import AnswerCache, respond



def _kind(schema: Any) -> str:
    """``integer``, ``string`` or ``json``: how a parameter's text is read."""
    if isinstance(schema, dict):
        kind = schema.get("type")
        if kind == "integer":
            return "integer"
        if kind == "string" or (kind is None and "enum" in schema and all(isinstance(v, str) for v in schema["enum"])):
            return "string"
    return "json"


class Binding:
    """How one operation's input is read from an HTTP request."""

    def __init__(self, op: Operation):
        assert op.http is not None
        self.op = op
        self.http = op.http
        schema = bundle(op.input)
        self.properties: dict[str, Any] = schema.get("properties", {})
        self.path = {wire: self.http.prop(wire) for wire in self.http.path_params()}
        in_path = set(self.path.values())
        self.query = {} if self.http.has_body else {
            self.http.wire(prop): prop for prop in self.properties if prop not in in_path}
        self.kinds = {prop: _kind(self.properties.get(prop)) for prop in [*self.path.values(), *self.query.values()]}
        #: input property → the parameter that carries it (a failure there is reported as that parameter's)
        self.wire_names = {**{p: w for w, p in self.query.items()}, **{p: w for w, p in self.path.items()}}

    def parameter(self, wire: str, raw: str) -> Any:
        """One path or query parameter's value (``InvalidRequest`` naming it)."""
        prop = self.http.prop(wire)
        kind = self.kinds[prop]
        if kind == "integer":
            try:
                return numbers.natural(raw)
            except numbers.NotANumber as exc:
                raise InvalidRequest(f"{wire} {exc}", details={"parameter": wire}) from None
        if kind == "json":
            try:
                return jsontext.loads(raw)
            except jsontext.NotJson:
                raise InvalidRequest(f"{wire} must be JSON, e.g. {{\"heading\": [\"Design\"]}}",
                                     details={"parameter": wire}) from None
        return raw

    async def values(self, req: falcon.asgi.Request, params: dict[str, str]) -> dict[str, Any]:
        """The validated input object of this request."""
        if self.http.has_body:
            return self.from_body(await read_body(req), params)
        values: dict[str, Any] = {}
        for wire, prop in self.query.items():
            raw = req.params.get(wire)
            if isinstance(raw, list):
                raise InvalidRequest(f"{wire} is given {len(raw)} times; give it once",
                                     details={"parameter": wire})
            if raw is None or (raw == "" and self.kinds[prop] == "json"):
                continue
            values[prop] = self.parameter(wire, raw)
        return self.with_path(values, params)

    def from_body(self, raw: bytes, params: dict[str, str]) -> dict[str, Any]:
        """The validated input object of a request with a body: the JSON object ``raw`` plus the path ``params``.

        ``InvalidRequest`` for a body that is not JSON, not an object, that
        gives a path parameter again, or that fails the input schema.
        """
        body = parse_json(raw)
        if not isinstance(body, dict):
            schemas.validate(self.op.input, body)  # raises: the input is an object
        if not self.path:  # the input is the body as sent: its bytes name it (schemas.is_valid)
            self.validate(body, raw)
            return body
        clash = sorted(set(body) & set(self.path.values()))
        if clash:
            raise InvalidRequest(f"request body is invalid at /{clash[0]}: it is given in the path",
                                 details={"pointer": "/" + clash[0], "reason": "given in the path"})
        return self.with_path(body, params)

    def with_path(self, values: dict[str, Any], params: dict[str, str]) -> dict[str, Any]:
        """``values`` with the path ``params`` added, validated (``InvalidRequest`` naming what failed)."""
        for wire, prop in self.path.items():
            values[prop] = self.parameter(wire, params[wire])
        self.validate(values)
        return values

    def validate(self, values: dict[str, Any], source: bytes | None = None) -> None:
        """Check ``values`` (the JSON text ``source``, when it is exactly that) against the input schema;
        a parameter's failure names it."""
        schemas.validate_parameters(self.op.input, values, self.wire_names, source)


class OperationResource:
    """A Falcon resource: the operations sharing one path, by HTTP method."""

    def __init__(self, runner: Runner, ops: list[Operation], answers: AnswerCache | None = None):
        self.runner = runner
        self.answers = answers or AnswerCache()
        self.bindings = {op.http.method: Binding(op) for op in ops if op.http is not None}
        self.public = all(b.http.public for b in self.bindings.values())
        #: the methods served (read by the middleware's method check instead of dir())
        self.allow = tuple(sorted(self.bindings))
        for method in self.bindings:
            setattr(self, f"on_{method.lower()}", self._responder(method))

    def _responder(self, method: str) -> Any:
        binding = self.bindings[method]
        op, status, runner = binding.op, binding.http.status, self.runner
        if binding.http.cache is not None:
            return self._cached_responder(binding)

        async def responder(req: falcon.asgi.Request, resp: falcon.asgi.Response, **params: str) -> None:
            actor = req.context.actor  # and its capability: the edge's (commonroom.http.edge)
            values = await binding.values(req, params)
            result = await runner.run(op, actor, values)
            send(resp, result, status)

        responder.__name__ = f"on_{method.lower()}"
        responder.__doc__ = op.summary
        return responder

    def _cached_responder(self, binding: Binding) -> Any:
        """A responder answering from :attr:`answers` (see :mod:`commonroom.http.answers`)."""
        op, status, runner, answers = binding.op, binding.http.status, self.runner, self.answers
        per_head = binding.http.cache == "head"
        encoder = replace(op, method=binding.http.encoder) if binding.http.encoder else None
        assert not (per_head and encoder), "an encoder answers a committed version only"

        async def responder(req: falcon.asgi.Request, resp: falcon.asgi.Response, **params: str) -> None:
            actor = req.context.actor  # and its capability: the edge's (commonroom.http.edge)
            key = (op.name, req.query_string, tuple(params.items()))
            entry = answers.get_head(key, runner.engine.head().number) if per_head else answers.get(key)
            if entry is None:
                values = await binding.values(req, params)
                if encoder is not None:
                    data, digest = await runner.run(encoder, actor, values)
                    entry = answers.put_encoded(key, data, digest)
                else:
                    result = await runner.run(op, actor, values)
                    entry = answers.put(key, result, head=result["version"] if per_head else None)
            respond(req, resp, answers, key, entry, status)

        responder.__name__ = f"on_{binding.http.method.lower()}"
        responder.__doc__ = op.summary
        return responder


def stream_routes(table: Table, listener: str, streams: dict[str, Any]) -> dict[str, Any]:
    """path → the resource serving each streaming operation of ``table`` on ``listener``.

    ``streams`` maps an operation's name to its resource (built by the
    composition root); a streaming operation without one is a ``ValueError``.
    """
    out: dict[str, Any] = {}
    for op in table.http(listener):
        if not op.streams:
            continue
        assert op.http is not None
        if op.name not in streams:
            raise ValueError(f"the streaming operation {op.name} has no stream to serve it")
        out[op.http.path] = streams[op.name]
    return out


#: The answer cache of each room, by its runner (one runner per room): the HTTP adapter's state, kept here
#: rather than on the runner, which sits below the adapters and knows nothing of HTTP answers.
_ANSWERS: WeakKeyDictionary[Runner, AnswerCache] = WeakKeyDictionary()


def room_answers(runner: Runner | None) -> AnswerCache:
    """The room's answer cache: one per runner (room), shared by both listeners and the front door (``commonroom.front``)."""
    if runner is None:
        return AnswerCache()
    answers = _ANSWERS.get(runner)
    if answers is None:
        answers = _ANSWERS[runner] = AnswerCache()
    return answers


def operation_routes(table: Table, listener: str, runner: Runner) -> dict[str, OperationResource]:
    """path → resource for every operation of ``table`` served on ``listener``."""
    answers = room_answers(runner)
    by_path: dict[str, list[Operation]] = {}
    for op in table.http(listener):
        assert op.http is not None
        if op.streams:
            continue  # served by the stream the composition root names (see stream_routes)
        by_path.setdefault(op.http.path, []).append(op)
    return {path: OperationResource(runner, ops, answers) for path, ops in by_path.items()}
