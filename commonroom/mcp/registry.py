"""The MCP catalog of a room: tools, resources, templates, prompts, methods.

Every tool, resource, template and prompt the room serves over ``/mcp`` is
registered here, commonroom's own (``tools.py``, ``resources.py``,
``prompts.py``, ``skills.py``) and any a plugin adds. The catalog is fixed
once the room has started (no list-changed notifications).

Plugins (tests only, e.g. the conformance fixtures)
---------------------------------------------------
Set ``COMMONROOM_MCP_PLUGINS="pkg.module:function[,other.module:function]"``
in the environment of ``ce serve``; the room imports each module and calls
``function(registry)`` once at start-up, after commonroom's own entries. A
plugin that fails to import or raises stops the room from starting. The
module must be importable by the room process (``ce`` is a console script:
put the repository on ``PYTHONPATH`` for ``tests.…`` modules).

API
---
``registry.add_tool(name, *, description, input_schema, handler, output_schema=None, annotations=None, title=None, cache_key=None, authorize=None, checked=False, head_key=None)``
    ``input_schema`` is a self-contained JSON Schema object with
    ``"type": "object"``; arguments are validated against it before
    ``handler(ctx)`` runs (a failure is an ``isError`` result carrying the
    ``invalid_request`` error object, as over HTTP). ``handler`` returns:

    - any JSON value → ``{content: [{type: "text", text: <json>}],
      structuredContent: <value>, isError: false}`` (a non-object value is
      wrapped as ``{"value": v}`` in structuredContent);
    - ``Raw({...})`` → that result object as is (e.g. your own ``content``
      list with images/audio, ``isError: true``, or an ``input_required``
      result); ``resultType`` defaults to ``"complete"``.

    Raising :class:`~commonroom.errors.CommonroomError` gives ``isError: true``
    with the error object as text and structuredContent; raising
    :class:`~commonroom.mcp.jsonrpc.JsonRpcError` gives that JSON-RPC error
    (e.g. ``missing_capability({"sampling": {}})`` → 400 / -32021).
    ``cache_key(ctx, value)`` (optional): the encoded result of a successful
    value is reused while the key is the same (the handler still runs on the full path).
    ``head_key(engine, arguments)`` (optional): the same key from the
    room's head alone (None: these arguments need the handler); a call it
    names whose encoding is cached, with nothing to piggyback, is answered
    from that encoding before the handler and Falcon (``commonroom/front/``):
    the handler does not run for it, so give one only to a tool whose
    handler checks and writes nothing beyond ``authorize``.

``add_task_tool(registry, name, *, description, input_schema, run, task_support="optional", prepare=None, title=None, annotations=None)``
    (from :mod:`commonroom.mcp.tooltasks`, which builds on this registry, the tool-call encoding and the tasks extension)
    A tool whose call, when the request declared the tasks extension,
    becomes a durable task of the room answered ``resultType: "task"``:
    ``async run(job)`` goes on in the background and its value (or error)
    finishes the task; ``job.ask({key: request})`` waits for
    ``tasks/update``, ``job.sleep(s)`` stops early on ``tasks/cancel``.
    ``task_support="required"`` is -32021 without the declaration. See
    :mod:`commonroom.mcp.tooltasks`.

``registry.add_resource(uri, *, name, mime_type, read, description=None, title=None, cache_scope="private", ttl_ms=0)``
    ``read(ctx)`` returns ``str`` (one text content), ``bytes`` (one blob
    content, base64), a ``list`` of ``ResourceContents`` dicts, any other
    JSON value (JSON text), or ``Raw({...})``.

``registry.add_template(uri_template, *, name, mime_type, read, description=None, title=None, cache_scope="private", ttl_ms=0)``
    RFC 6570 level-1 templates (``test://template/{id}/data``); each
    ``{var}`` matches one path segment. ``read(ctx)`` as above, with
    ``ctx.variables`` (``{"id": "..."}``) and ``ctx.uri``.

``registry.add_prompt(name, *, description, arguments, get, title=None)``
    ``arguments`` is a list of ``{"name", "description"?, "required"?}``;
    missing required arguments are -32602 before ``get`` runs.
    ``get(ctx)`` (``ctx.arguments``: str → str) returns a list of
    PromptMessage dicts, a dict with ``messages`` (and ``description``), or
    ``Raw({...})``.

``registry.add_method(method, handler, *, name_param=None, name_required=True, params_schema=None)``
    A whole JSON-RPC method (extensions: ``skills/list``; later
    ``tasks/get``, ``subscriptions/listen``). ``handler(ctx)`` returns the
    result dict (``resultType`` and serverInfo are added) or a
    :class:`Stream`. ``name_param`` is the params field ``Mcp-Name``
    mirrors (required unless ``name_required=False``).

``registry.add_completion(argument, source, *, prompt=None, template=None)``
    Completion values for a prompt or resource-template argument
    (``completion/complete``, :mod:`.completions`). ``source(ctx, value)``
    returns every candidate string, best first (``ctx.arguments`` holds the
    arguments already resolved); the method filters them by ``value`` and
    answers at most 100. With ``prompt`` (a prompt name) or ``template`` (a
    URI template) it serves that one reference; with neither, it serves
    every prompt and template that declares ``argument`` (how handoff ids
    plug in: ``add_completion("handoff_id", handoff_ids)``).

``registry.add_extension(id, settings=None)`` / ``registry.add_capability(name, value)``
    Advertised in ``server/discover`` capabilities (``extensions[id]`` /
    ``capabilities[name]``, e.g. ``add_capability("completions", {})``
    together with ``add_method("completion/complete", ...)``).

Handlers may be plain functions or ``async def``. The :class:`Context` they
receive carries ``engine``, ``actor`` (the caller's session), ``method``,
``params`` (the request params), ``meta`` (``params._meta``),
``request_id``, ``headers`` (lower-cased names), ``arguments``, ``uri``,
``variables`` and ``registry``; ``ctx.declared("sampling")`` or
``ctx.declared("extensions", "io.modelcontextprotocol/tasks")`` tells
whether the client declared a capability on this request.
"""

from __future__ import annotations

import importlib
import os
import re
from dataclasses import dataclass, field
from typing import Any, AsyncIterator, Callable, Iterable, Mapping

from jsonschema import Draft202012Validator

from .jsonrpc import META_CAPABILITIES

PLUGINS_ENV = "COMMONROOM_MCP_PLUGINS"


#: ``source(ctx, value)`` → every candidate completion value, best first.
CompletionSource = Callable[["Context", str], Iterable[str]]


class Raw:
    """A handler's result passed through as the MCP result object."""

    def __init__(self, result: dict[str, Any]):
        self.result = dict(result)


class Stream:
    """A result answered as ``text/event-stream``: JSON-RPC messages, then the end.

    ``messages`` yields message dicts (``None`` = heartbeat comment); the
    transport stops when it ends or the client goes away (then ``close``).
    """

    def __init__(self, messages: AsyncIterator[dict[str, Any] | None], close: Callable[[], None] | None = None):
        self.messages = messages
        self.close = close or (lambda: None)


@dataclass
class Context:
    """What every handler receives (see the module docstring)."""

    engine: Any
    actor: Any
    method: str
    params: dict[str, Any]
    registry: "Registry"
    runner: Any = None
    request_id: Any = None
    headers: Mapping[str, str] = field(default_factory=dict)
    arguments: dict[str, Any] = field(default_factory=dict)
    uri: str | None = None
    variables: dict[str, str] = field(default_factory=dict)

    @property
    def meta(self) -> dict[str, Any]:
        """``params._meta``."""
        return self.params.get("_meta") or {}

    @property
    def client_capabilities(self) -> dict[str, Any]:
        """The ClientCapabilities declared on this request."""
        return self.meta.get(META_CAPABILITIES) or {}

    def declared(self, *path: str) -> bool:
        """True when the client declared the capability at ``path`` on this request."""
        node: Any = self.client_capabilities
        for key in path:
            if not isinstance(node, dict) or key not in node:
                return False
            node = node[key]
        return node is not None


@dataclass
class Tool:
    """A registered tool."""

    name: str
    description: str
    input_schema: dict[str, Any]
    handler: Callable[[Context], Any]
    output_schema: dict[str, Any] | None = None
    annotations: dict[str, Any] | None = None
    title: str | None = None
    validator: Draft202012Validator | None = field(default=None, repr=False)
    cache_key: Callable[[Context, Any], Any] | None = field(default=None, repr=False)
    authorize: Callable[[Context], None] | None = field(default=None, repr=False)
    head_key: Callable[[Any, dict[str, Any]], Any] | None = field(default=None, repr=False)
    #: The byte bound of a size-bounded answer (its text repeats the JSON only within it).
    result_bytes: int | None = None

    def descriptor(self) -> dict[str, Any]:
        """The ``Tool`` object of ``tools/list``."""
        out: dict[str, Any] = {"name": self.name}
        if self.title:
            out["title"] = self.title
        out["description"] = self.description
        out["inputSchema"] = self.input_schema
        if self.output_schema is not None:
            out["outputSchema"] = self.output_schema
        if self.annotations:
            out["annotations"] = self.annotations
        return out


@dataclass
class Resource:
    """A registered resource (fixed URI)."""

    uri: str
    name: str
    mime_type: str | None
    read: Callable[[Context], Any]
    description: str | None = None
    title: str | None = None
    cache_scope: str = "private"
    ttl_ms: int = 0

    def descriptor(self) -> dict[str, Any]:
        """The ``Resource`` object of ``resources/list``."""
        out: dict[str, Any] = {"uri": self.uri, "name": self.name}
        if self.title:
            out["title"] = self.title
        if self.description:
            out["description"] = self.description
        if self.mime_type:
            out["mimeType"] = self.mime_type
        return out


@dataclass
class Template:
    """A registered resource template (RFC 6570 level 1)."""

    uri_template: str
    name: str
    mime_type: str | None
    read: Callable[[Context], Any]
    description: str | None = None
    title: str | None = None
    cache_scope: str = "private"
    ttl_ms: int = 0
    pattern: re.Pattern[str] | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        parts = re.split(r"\{([A-Za-z0-9_]+)\}", self.uri_template)
        regex = "".join(
            re.escape(part) if i % 2 == 0 else f"(?P<{part}>[^/?#]+)" for i, part in enumerate(parts)
        )
        self.pattern = re.compile(f"^{regex}$")

    def match(self, uri: str) -> dict[str, str] | None:
        """The variables when ``uri`` matches, else None."""
        found = self.pattern.match(uri) if self.pattern else None
        return found.groupdict() if found else None

    def descriptor(self) -> dict[str, Any]:
        """The ``ResourceTemplate`` object of ``resources/templates/list``."""
        out: dict[str, Any] = {"uriTemplate": self.uri_template, "name": self.name}
        if self.title:
            out["title"] = self.title
        if self.description:
            out["description"] = self.description
        if self.mime_type:
            out["mimeType"] = self.mime_type
        return out


@dataclass
class Prompt:
    """A registered prompt."""

    name: str
    description: str
    arguments: list[dict[str, Any]]
    get: Callable[[Context], Any]
    title: str | None = None

    def descriptor(self) -> dict[str, Any]:
        """The ``Prompt`` object of ``prompts/list``."""
        out: dict[str, Any] = {"name": self.name}
        if self.title:
            out["title"] = self.title
        out["description"] = self.description
        out["arguments"] = self.arguments
        return out


@dataclass
class Method:
    """A registered whole method (extensions)."""

    name: str
    handler: Callable[[Context], Any]
    name_param: str | None = None
    name_required: bool = True
    params_schema: str | None = None


class Registry:
    """The catalog; see the module docstring for the API."""

    def __init__(self) -> None:
        self.tools: dict[str, Tool] = {}
        self.resources: dict[str, Resource] = {}
        self.templates: list[Template] = []
        self.prompts: dict[str, Prompt] = {}
        self.methods: dict[str, Method] = {}
        self.extensions: dict[str, dict[str, Any]] = {}
        self.capabilities: dict[str, Any] = {}
        #: (kind, prompt name or URI template or None, argument) → completion source.
        self.completions: dict[tuple[str | None, str | None, str], CompletionSource] = {}

    # -- adding -----------------------------------------------------------
    def add_tool(self, name: str, *, description: str, input_schema: dict[str, Any],
                 handler: Callable[[Context], Any], output_schema: dict[str, Any] | None = None,
                 annotations: dict[str, Any] | None = None, title: str | None = None,
                 cache_key: Callable[[Context, Any], Any] | None = None,
                 authorize: Callable[[Context], None] | None = None, checked: bool = False,
                 head_key: Callable[[Any, dict[str, Any]], Any] | None = None,
                 result_bytes: int | None = None) -> Tool:
        """Register a tool (``ValueError`` for a duplicate or a non-object schema).

        ``input_schema`` is checked against the JSON Schema 2020-12
        metaschema (``jsonschema.SchemaError``) unless ``checked`` says it
        already was: the operation table's tools are bundled from
        ``schema/``, and ``tests/e2e/test_mcp_discovery.py`` checks each of
        them; checking them again here would slow every room start.

        ``cache_key(ctx, value)`` (optional) names a successful value whose
        encoded result may be reused while the key is the same (the handler
        still runs every time; only the JSON encoding is cached).
        ``head_key(engine, arguments)`` (optional, with ``cache_key``) is
        that key computed from the room's head alone, before any handler
        runs, or None when the arguments need the handler: a call it names
        whose encoding is cached is answered before Falcon
        (:mod:`commonroom.front.toolcalls`).
        ``authorize(ctx)`` (optional) runs before the arguments are validated
        and may raise ``CommonroomError`` (an ``isError`` result).
        ``result_bytes`` (optional): the byte bound of a size-bounded answer
        (:func:`commonroom.mcp.dispatch.encode_tool_value`).
        """
        self._unique(name, self.tools, "tool")
        if not isinstance(input_schema, dict) or input_schema.get("type") != "object":
            raise ValueError(f"tool {name!r}: inputSchema must be a JSON Schema with type object")
        if output_schema is not None and output_schema.get("type") != "object":
            raise ValueError(f"tool {name!r}: outputSchema must have type object")
        if not checked:
            Draft202012Validator.check_schema(input_schema)
        tool = Tool(name, description, input_schema, handler, output_schema, annotations, title,
                    Draft202012Validator(input_schema), cache_key, authorize, head_key, result_bytes)
        self.tools[name] = tool
        return tool

    def add_resource(self, uri: str, *, name: str, mime_type: str | None, read: Callable[[Context], Any],
                     description: str | None = None, title: str | None = None,
                     cache_scope: str = "private", ttl_ms: int = 0) -> Resource:
        """Register a resource with a fixed URI."""
        self._unique(uri, self.resources, "resource")
        _check_cache(cache_scope, ttl_ms)
        resource = Resource(uri, name, mime_type, read, description, title, cache_scope, ttl_ms)
        self.resources[uri] = resource
        return resource

    def add_template(self, uri_template: str, *, name: str, mime_type: str | None,
                     read: Callable[[Context], Any], description: str | None = None,
                     title: str | None = None, cache_scope: str = "private", ttl_ms: int = 0) -> Template:
        """Register a resource template."""
        if any(t.uri_template == uri_template for t in self.templates):
            raise ValueError(f"template {uri_template!r} is registered already")
        _check_cache(cache_scope, ttl_ms)
        template = Template(uri_template, name, mime_type, read, description, title, cache_scope, ttl_ms)
        self.templates.append(template)
        return template

    def add_prompt(self, name: str, *, description: str, arguments: list[dict[str, Any]],
                   get: Callable[[Context], Any], title: str | None = None) -> Prompt:
        """Register a prompt."""
        self._unique(name, self.prompts, "prompt")
        for arg in arguments:
            if not isinstance(arg.get("name"), str):
                raise ValueError(f"prompt {name!r}: every argument needs a name")
        prompt = Prompt(name, description, [dict(a) for a in arguments], get, title)
        self.prompts[name] = prompt
        return prompt

    def add_method(self, method: str, handler: Callable[[Context], Any], *,
                   name_param: str | None = None, name_required: bool = True,
                   params_schema: str | None = None) -> Method:
        """Register a whole JSON-RPC method (an extension's).

        ``params_schema`` names the schema its params must match
        (``"mcp#UriParams"``); the dispatcher answers -32602 otherwise,
        before ``handler`` runs.
        """
        self._unique(method, self.methods, "method")
        entry = Method(method, handler, name_param, name_required, params_schema)
        self.methods[method] = entry
        return entry

    def add_completion(self, argument: str, source: "CompletionSource", *, prompt: str | None = None,
                       template: str | None = None) -> None:
        """Register completion values for ``argument`` (see the module docstring)."""
        if prompt is not None and template is not None:
            raise ValueError("a completion serves a prompt or a template, not both")
        key = ("ref/prompt", prompt, argument) if prompt is not None else \
            ("ref/resource", template, argument) if template is not None else (None, None, argument)
        if key in self.completions:
            raise ValueError(f"completion {key!r} is registered already")
        self.completions[key] = source

    def completion_source(self, kind: str, ref: str, argument: str) -> "CompletionSource | None":
        """The source for ``argument`` of the prompt or template ``ref``: its own, else the argument-wide one."""
        return self.completions.get((kind, ref, argument)) or self.completions.get((None, None, argument))

    def add_extension(self, extension_id: str, settings: dict[str, Any] | None = None) -> None:
        """Advertise ``capabilities.extensions[extension_id]`` in discover."""
        self.extensions[extension_id] = dict(settings or {})

    def add_capability(self, name: str, value: dict[str, Any]) -> None:
        """Advertise a top-level server capability (e.g. ``completions``)."""
        self.capabilities[name] = dict(value)

    # -- looking up -------------------------------------------------------
    def find_resource(self, uri: str) -> tuple[Resource | Template, dict[str, str]] | None:
        """The resource, or the first template matching ``uri`` with its variables."""
        if uri in self.resources:
            return self.resources[uri], {}
        for template in self.templates:
            variables = template.match(uri)
            if variables is not None:
                return template, variables
        return None

    def name_params(self) -> tuple[dict[str, str], dict[str, str]]:
        """(required, optional) maps of method → the param ``Mcp-Name`` mirrors."""
        required = {m.name: m.name_param for m in self.methods.values() if m.name_param and m.name_required}
        optional = {m.name: m.name_param for m in self.methods.values() if m.name_param and not m.name_required}
        return required, optional

    def load_plugins(self, spec: str | None = None) -> list[str]:
        """Call each ``module:function`` of ``spec`` (default: the env var); returns them."""
        spec = os.environ.get(PLUGINS_ENV, "") if spec is None else spec
        loaded = []
        for item in filter(None, (s.strip() for s in spec.split(","))):
            module_name, _, function_name = item.partition(":")
            if not module_name or not function_name:
                raise RuntimeError(f"{PLUGINS_ENV}: {item!r} is not module:function")
            function = getattr(importlib.import_module(module_name), function_name)
            function(self)
            loaded.append(item)
        return loaded

    @staticmethod
    def _unique(key: str, table: dict[str, Any], kind: str) -> None:
        if key in table:
            raise ValueError(f"{kind} {key!r} is registered already")


def _check_cache(scope: str, ttl_ms: int) -> None:
    if scope not in ("public", "private"):
        raise ValueError("cache_scope must be 'public' or 'private'")
    if not isinstance(ttl_ms, int) or ttl_ms < 0:
        raise ValueError("ttl_ms must be an integer >= 0")
