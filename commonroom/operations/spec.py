"""What one operation declaration says, and the table that holds them.

An :class:`Operation` is the single declaration of something a participant
(or the operator) can do: its name, the engine method it calls and with
which arguments, its input and answer schemas (``schema/``, one input
schema used by HTTP and MCP alike), the capability it needs, the errors it
can answer, and its bindings: :class:`Http` (method, path, success status,
listeners) and :class:`Mcp` (tool title, description, annotations,
``x-mcp-header`` hints). Every adapter is derived from these: the Falcon
routes (:mod:`commonroom.http.operations`), the MCP tools
(:mod:`commonroom.mcp.tools`), both OpenAPI documents
(:mod:`commonroom.http.openapi`), the tables in ``docs/``
(:mod:`commonroom.operations.docs`) and the HTTP/MCP parity tests.

HTTP mapping of the one input object: a ``{name}`` in the path is the
input property ``name`` (or ``Http.aliases[name]``); for ``GET`` and
``DELETE`` every other input property is a query parameter; for ``POST``
and ``PUT`` every other property is in the JSON body.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Iterator

from ..engine.base import require
from ..errors import STATUS

#: Listener names: the session ingress and the owner port.
INGRESS = "ingress"
OWNER = "owner"
BOTH: tuple[str, ...] = (INGRESS, OWNER)

_MISSING = object()


@dataclass(frozen=True)
class Arg:
    """One argument of the engine call: the input property ``name``.

    ``keyword`` passes it by that keyword, and only when present in the
    input; otherwise it is positional and ``default`` stands in when the
    input lacks it.
    """

    name: str
    default: Any = None
    keyword: str | None = None


@dataclass(frozen=True)
class Http:
    """The HTTP binding: ``method`` (``GET``…), ``path`` (``/workspace/leases/{lease_id}``).

    ``status`` is the success status; ``listeners`` the listeners serving
    it (:data:`BOTH`, ``(INGRESS,)`` or ``(OWNER,)``); ``aliases`` maps a
    wire name (query or path) to its input property (``{"from":
    "from_version"}``); ``json_query`` names query parameters carried as
    JSON text (``region={"heading":["Design"]}``); ``public`` routes need
    no bearer; ``headers`` maps a request header to the input property it
    also carries (``{"Last-Event-ID": "since_event_id"}``; the header wins).
    ``cache`` keeps the encoded answers (:mod:`commonroom.http.answers`):
    ``"head"`` per input and head version, ``"version"`` per input (the
    answer of a committed version never changes); such an answer carries an
    ``ETag`` (its ``content_hash``), honours ``If-None-Match`` (304) and
    ``Accept-Encoding: gzip``. ``encoder`` (with ``cache="version"``) names
    an engine method taking the same arguments and answering ``(the JSON
    bytes of the answer, its content hash)`` without building the answer
    (``version_encoded``); the bytes must equal the encoded answer.
    """

    method: str
    path: str
    status: int = 200
    listeners: tuple[str, ...] = BOTH
    aliases: dict[str, str] = field(default_factory=dict)
    public: bool = False
    headers: dict[str, str] = field(default_factory=dict)
    cache: str | None = None
    encoder: str | None = None

    def path_params(self) -> list[str]:
        """The ``{names}`` in the path, in order (wire names)."""
        return re.findall(r"\{([A-Za-z0-9_]+)\}", self.path)

    def prop(self, wire: str) -> str:
        """The input property a wire name (path or query) stands for."""
        return self.aliases.get(wire, wire)

    def wire(self, prop: str) -> str:
        """The wire name of an input property."""
        for wire, name in self.aliases.items():
            if name == prop:
                return wire
        return prop

    @property
    def has_body(self) -> bool:
        """True for methods whose input comes in a JSON body."""
        return self.method in ("POST", "PUT", "PATCH")


@dataclass(frozen=True)
class Mcp:
    """The MCP tool binding: ``title``, ``description`` (for the model),
    annotations (``read_only``, ``destructive``, ``idempotent``) and
    ``headers``: input property → ``x-mcp-header`` name (MCP 2026-07-28,
    Mcp-Param headers). ``cache="head"`` keeps the encoded result of a
    successful call per head version and arguments (the answer carries
    ``version`` and ``content_hash``; :mod:`commonroom.mcp.tools`), and lets
    the room's front (:mod:`commonroom.front`) answer a call without
    arguments from it, as ``Http(cache="head")`` does for a request
    without a query. ``result_bytes`` is the byte bound of an answer
    bounded by size (the board summaries): its text content repeats the
    JSON only while text and ``structuredContent`` together stay within it,
    else it is one sentence pointing at ``structuredContent``
    (:func:`commonroom.mcp.dispatch.encode_tool_value`)."""

    title: str
    description: str
    destructive: bool = False
    idempotent: bool = False
    headers: dict[str, str] = field(default_factory=dict)
    cache: str | None = None
    result_bytes: int | None = None


@dataclass(frozen=True)
class Operation:
    """One operation (see the module docstring).

    ``method`` names the :class:`~commonroom.engine.Engine` method;
    ``args`` the input properties passed to it, in order (strings or
    :class:`Arg`); ``actor`` whether the caller's Actor comes first.
    ``input`` and ``answer`` name schemas as ``"<file>#<Def>"``;
    ``errors`` the catalogue codes the operation itself can answer (the
    adapters add ``invalid_request``, ``unauthorized``,
    ``session_expired``, ``permission_denied`` and ``limit_exceeded``
    where they apply, and ``storage_unavailable`` to every write). ``read_only`` operations run on the event loop;
    the others on the room's one writer thread. ``also`` names capabilities
    that stand in for ``capability`` (``leases_list``: read or lease).
    ``streams``: the answer
    is an event stream of ``answer`` objects, not one JSON body: the HTTP
    adapter does not call the engine then, the composition root serves the
    stream named by ``method`` at the declared path (``/workspace/observe``
    is :class:`commonroom.live.sse.ObserveResource`). ``tag`` groups operations by
    concern (OpenAPI tags, docs). ``no_command`` says why ``ce`` has no
    command calling the operation; empty, some ``ce`` command calls it by
    name (``tests/unit/test_operation_table.py`` holds both ways).
    """

    name: str
    summary: str
    method: str
    input: str
    answer: str
    tag: str
    args: tuple[str | Arg, ...] = ()
    capability: str | None = None
    also: tuple[str, ...] = ()
    errors: tuple[str, ...] = ()
    read_only: bool = True
    actor: bool = True
    http: Http | None = None
    mcp: Mcp | None = None
    streams: bool = False
    no_command: str = ""

    def __post_init__(self) -> None:
        unknown = [code for code in self.errors if code not in STATUS]
        if unknown:
            raise ValueError(f"operation {self.name}: unknown error codes {unknown}")

    def authorize(self, actor: Any) -> None:
        """``PermissionDenied`` unless ``actor`` holds the capability (or one of ``also``).

        The adapters call it before they read the input, so a caller without
        the capability learns nothing about the input's shape (the engine
        method checks again, with its own finer rules such as "the author").
        """
        if self.capability is None or actor is None:
            return
        held = actor.capabilities
        if self.capability in held:
            return
        for cap in self.also:
            if cap in held:
                return
        require(actor, self.capability)

    @cached_property
    def arg_specs(self) -> tuple[Arg, ...]:
        """``args``, each as an :class:`Arg` (built once, not at every call)."""
        return tuple(arg if isinstance(arg, Arg) else Arg(arg) for arg in self.args)

    def arguments(self, values: dict[str, Any]) -> tuple[list[Any], dict[str, Any]]:
        """``(positional, keyword)`` engine arguments from the input object."""
        positional: list[Any] = []
        keyword: dict[str, Any] = {}
        for spec in self.arg_specs:
            if spec.keyword is not None:
                if spec.name in values:
                    keyword[spec.keyword] = values[spec.name]
                continue
            positional.append(values.get(spec.name, spec.default))
        return positional, keyword

    def bind(self, engine: Any, actor: Any, values: dict[str, Any]) -> Any:
        """Call the engine method with ``values`` (the validated input object)."""
        positional, keyword = self.arguments(values)
        if self.actor:
            positional.insert(0, actor)
        return getattr(engine, self.method)(*positional, **keyword)

    def error_statuses(self, listener: str) -> dict[int, list[str]]:
        """HTTP status → the error codes this operation can answer on ``listener``."""
        codes = ["invalid_request", *self.errors]
        http = self.http
        public = http.public if http else False
        if not public:
            codes.append("unauthorized")
            if listener == INGRESS:
                codes += ["session_expired", "limit_exceeded"]
        if self.capability and not public:
            codes.append("permission_denied")
        if not self.read_only:
            codes.append("storage_unavailable")  # a commit the disk refused (store/faults.py)
        out: dict[int, list[str]] = {}
        for code in dict.fromkeys(codes):
            out.setdefault(STATUS[code], []).append(code)
        if http is not None and http.has_body:
            out.setdefault(413, []).append("limit_exceeded")
        return dict(sorted(out.items()))


class Table:
    """An ordered set of operations, looked up by name (``ValueError`` on a duplicate)."""

    def __init__(self, operations: list[Operation] | tuple[Operation, ...] = ()):
        self._ops: dict[str, Operation] = {}
        for op in operations:
            self.add(op)

    def add(self, op: Operation) -> Operation:
        """Declare one more operation (tests add their own to a copy)."""
        if op.name in self._ops:
            raise ValueError(f"operation {op.name!r} is declared already")
        if op.http is not None:
            for other in self._ops.values():
                if other.http and (other.http.method, other.http.path) == (op.http.method, op.http.path):
                    raise ValueError(f"{op.http.method} {op.http.path} is {other.name} already")
        self._ops[op.name] = op
        return op

    def copy(self) -> "Table":
        """A new table with the same operations."""
        return Table(list(self))

    def __iter__(self) -> Iterator[Operation]:
        return iter(self._ops.values())

    def __getitem__(self, name: str) -> Operation:
        return self._ops[name]

    def __contains__(self, name: object) -> bool:
        return name in self._ops

    def __len__(self) -> int:
        return len(self._ops)

    def http(self, listener: str) -> list[Operation]:
        """Operations with an HTTP binding served on ``listener``."""
        return [op for op in self if op.http is not None and listener in op.http.listeners]

    def tools(self) -> list[Operation]:
        """Operations exposed as MCP tools."""
        return [op for op in self if op.mcp is not None]
