"""The MCP conformance suite's fixture tools, resources and prompts (tests only).

The official suite (@modelcontextprotocol/conformance 0.2.0-alpha.12) calls
fixed names taken from its reference "everything" server. A room under test
loads this module through the registry's plugin hook::

    COMMONROOM_MCP_PLUGINS=tests.conformance.mcp.fixtures:register ce serve FILE

It is never imported by the product. Names, arguments and outputs follow the
scenario descriptions inside the installed package (``conformance list
--requirements 2026-07-28`` and each scenario's description).

The multi-round-trip (``input_required``) fixtures keep no state: each round's
``requestState`` is an HMAC-signed token (key made per room process), so a
tampered state is refused with -32602.

The ``tasks-*`` scenarios' task-running tools are in :mod:`.task_fixtures`.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
import struct
import zlib
from typing import Any

from commonroom.mcp.jsonrpc import invalid_params, missing_capability
from commonroom.mcp.registry import Raw

NO_ARGS: dict[str, Any] = {"type": "object", "properties": {}}

_KEY = secrets.token_bytes(32)


def _png_1x1_red() -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    header = struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)
    pixels = zlib.compress(b"\x00\xff\x00\x00")
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", pixels) + chunk(b"IEND", b"")


def _wav_silence() -> bytes:
    rate, samples = 8000, 80  # 10 ms of 8-bit mono silence
    data = b"\x80" * samples
    fmt = struct.pack("<HHIIHH", 1, 1, rate, rate, 1, 8)
    body = b"WAVE" + b"fmt " + struct.pack("<I", len(fmt)) + fmt + b"data" + struct.pack("<I", len(data)) + data
    return b"RIFF" + struct.pack("<I", len(body)) + body


PNG = base64.b64encode(_png_1x1_red()).decode("ascii")
WAV = base64.b64encode(_wav_silence()).decode("ascii")


def _text(text: str) -> Raw:
    return Raw({"content": [{"type": "text", "text": text}]})


# -- requestState: signed, stateless -----------------------------------------

def _sign(payload: dict[str, Any]) -> str:
    body = base64.urlsafe_b64encode(json.dumps(payload, sort_keys=True).encode()).decode().rstrip("=")
    mac = hmac.new(_KEY, body.encode(), hashlib.sha256).hexdigest()
    return f"{body}.{mac}"


def _verify(state: Any, tool: str) -> dict[str, Any]:
    if not isinstance(state, str) or "." not in state:
        raise invalid_params("requestState is not one this server issued", {"field": "requestState"})
    body, _, mac = state.rpartition(".")
    expected = hmac.new(_KEY, body.encode(), hashlib.sha256).hexdigest()
    if not hmac.compare_digest(mac, expected):
        raise invalid_params("requestState failed its integrity check", {"field": "requestState"})
    payload = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
    if payload.get("tool") != tool:
        raise invalid_params("requestState belongs to another request", {"field": "requestState"})
    return payload


def _responses(ctx: Any) -> dict[str, Any]:
    """The request's ``inputResponses`` (-32602 when it is not an object of objects)."""
    if "inputResponses" not in ctx.params:
        return {}
    value = ctx.params["inputResponses"]
    if not isinstance(value, dict):
        raise invalid_params("inputResponses must be an object", {"field": "inputResponses"})
    for key, item in value.items():
        if not isinstance(item, dict):
            raise invalid_params(f"inputResponses.{key} must be an object", {"field": f"inputResponses/{key}"})
    return value


def _require(ctx: Any, capability: str) -> None:
    if not ctx.declared(capability):
        raise missing_capability({capability: {}})


def _elicit(message: str, prop: str, prop_type: str = "string") -> dict[str, Any]:
    return {"method": "elicitation/create",
            "params": {"mode": "form", "message": message,
                       "requestedSchema": {"type": "object", "properties": {prop: {"type": prop_type}},
                                           "required": [prop]}}}


def _sample(text: str, max_tokens: int) -> dict[str, Any]:
    return {"method": "sampling/createMessage",
            "params": {"messages": [{"role": "user", "content": {"type": "text", "text": text}}],
                       "maxTokens": max_tokens}}


ROOTS = {"method": "roots/list", "params": {}}


def _input_required(requests: dict[str, Any], state: str | None = None) -> Raw:
    out: dict[str, Any] = {"resultType": "input_required", "inputRequests": requests}
    if state is not None:
        out["requestState"] = state
    return Raw(out)


def _accepted(response: dict[str, Any], field: str) -> Any:
    content = response.get("content") if response.get("action") == "accept" else None
    return content.get(field) if isinstance(content, dict) else None


def _sampled_text(response: dict[str, Any]) -> str:
    content = response.get("content")
    if isinstance(content, dict) and isinstance(content.get("text"), str):
        return content["text"]
    return ""


# -- input_required tools ----------------------------------------------------

def elicitation_tool(ctx: Any) -> Raw:
    _require(ctx, "elicitation")
    answers = _responses(ctx)
    if "user_name" not in answers:
        return _input_required({"user_name": _elicit("What is your name?", "name")})
    name = _accepted(answers["user_name"], "name") or "stranger"
    return _text(f"Hello, {name}!")


def sampling_tool(ctx: Any) -> Raw:
    _require(ctx, "sampling")
    answers = _responses(ctx)
    if "capital_question" not in answers:
        return _input_required({"capital_question": _sample("What is the capital of France?", 100)})
    return _text(f"The model said: {_sampled_text(answers['capital_question'])}")


def list_roots_tool(ctx: Any) -> Raw:
    _require(ctx, "roots")
    answers = _responses(ctx)
    if "client_roots" not in answers:
        return _input_required({"client_roots": ROOTS})
    roots = answers["client_roots"].get("roots") or []
    uris = ", ".join(r.get("uri", "?") for r in roots if isinstance(r, dict)) or "none"
    return _text(f"Client roots: {uris}")


def request_state_tool(ctx: Any) -> Raw:
    _require(ctx, "elicitation")
    answers = _responses(ctx)
    tool = "test_input_required_result_request_state"
    if "confirm" not in answers or "requestState" not in ctx.params:
        return _input_required({"confirm": _elicit("Please confirm", "ok", "boolean")}, _sign({"tool": tool, "round": 1}))
    _verify(ctx.params["requestState"], tool)
    return _text(f"state-ok: confirmed={_accepted(answers['confirm'], 'ok')}")


def multiple_inputs_tool(ctx: Any) -> Raw:
    for capability in ("elicitation", "sampling", "roots"):
        _require(ctx, capability)
    tool = "test_input_required_result_multiple_inputs"
    answers = _responses(ctx)
    wanted = {"user_name": _elicit("What is your name?", "name"),
              "greeting": _sample("Generate a greeting", 50),
              "client_roots": ROOTS}
    if "requestState" in ctx.params:
        _verify(ctx.params["requestState"], tool)
    missing = {key: request for key, request in wanted.items() if key not in answers}
    if missing:
        return _input_required(missing, _sign({"tool": tool}))
    name = _accepted(answers["user_name"], "name") or "stranger"
    return _text(f"{_sampled_text(answers['greeting'])} {name} "
                 f"({len(answers['client_roots'].get('roots') or [])} roots)")


def multi_round_tool(ctx: Any) -> Raw:
    _require(ctx, "elicitation")
    tool = "test_input_required_result_multi_round"
    answers = _responses(ctx)
    state = _verify(ctx.params["requestState"], tool) if "requestState" in ctx.params else {"round": 0}
    if state["round"] == 0 or (state["round"] == 1 and "step1" not in answers):
        return _input_required({"step1": _elicit("Step 1: What is your name?", "name")},
                               _sign({"tool": tool, "round": 1}))
    if state["round"] == 1 or (state["round"] == 2 and "step2" not in answers):
        name = _accepted(answers.get("step1", {}), "name") if state["round"] == 1 else state.get("name")
        return _input_required({"step2": _elicit("Step 2: What is your favorite color?", "color")},
                               _sign({"tool": tool, "round": 2, "name": name}))
    return _text(f"{state.get('name') or 'stranger'} likes {_accepted(answers['step2'], 'color') or 'no color'}")


def tampered_state_tool(ctx: Any) -> Raw:
    _require(ctx, "elicitation")
    tool = "test_input_required_result_tampered_state"
    answers = _responses(ctx)
    if "requestState" in ctx.params:
        _verify(ctx.params["requestState"], tool)
        if "confirm" in answers:
            return _text("state verified")
    return _input_required({"confirm": _elicit("Please confirm", "ok", "boolean")}, _sign({"tool": tool}))


def capabilities_tool(ctx: Any) -> Raw:
    answers = _responses(ctx)
    requests: dict[str, Any] = {}
    if ctx.declared("elicitation") and "user_name" not in answers:
        requests["user_name"] = _elicit("What is your name?", "name")
    if ctx.declared("sampling") and "greeting" not in answers:
        requests["greeting"] = _sample("Generate a greeting", 50)
    if ctx.declared("roots") and "client_roots" not in answers:
        requests["client_roots"] = ROOTS
    if requests:
        return _input_required(requests)
    if not answers:
        raise missing_capability({"sampling": {}})
    return _text("Used only the declared capabilities: " + ", ".join(sorted(answers)))


def streaming_elicitation_tool(ctx: Any) -> Raw:
    if not ctx.declared("elicitation"):
        return _text("No elicitation capability declared; nothing to ask.")
    answers = _responses(ctx)
    if "user_name" not in answers:
        return _input_required({"user_name": _elicit("What is your name?", "name")})
    return _text(f"Hello, {_accepted(answers['user_name'], 'name') or 'stranger'}!")


def missing_capability_tool(ctx: Any) -> Raw:
    _require(ctx, "sampling")
    return _text("The client declared sampling.")


def input_required_prompt(ctx: Any) -> Raw | dict[str, Any]:
    _require(ctx, "elicitation")
    answers = _responses(ctx)
    if "user_context" not in answers:
        return _input_required({"user_context": _elicit("What context should the prompt use?", "context")})
    context = _accepted(answers["user_context"], "context") or ""
    return {"description": "A prompt that asked for its context first",
            "messages": [{"role": "user", "content": {"type": "text", "text": f"Use this context: {context}"}}]}


# -- registration --------------------------------------------------------------

def register(registry: Any) -> None:
    """Add every fixture the 2026-07-28 scenarios call (plugin entry point)."""
    tool = registry.add_tool

    tool("test_simple_text", description="Returns simple text content", input_schema=NO_ARGS,
         handler=lambda ctx: _text("This is a simple text response for testing."))
    tool("test_image_content", description="Returns image content (a 1x1 red PNG)", input_schema=NO_ARGS,
         handler=lambda ctx: Raw({"content": [{"type": "image", "data": PNG, "mimeType": "image/png"}]}))
    tool("test_audio_content", description="Returns audio content (10 ms of WAV silence)", input_schema=NO_ARGS,
         handler=lambda ctx: Raw({"content": [{"type": "audio", "data": WAV, "mimeType": "audio/wav"}]}))
    tool("test_embedded_resource", description="Returns an embedded resource", input_schema=NO_ARGS,
         handler=lambda ctx: Raw({"content": [{"type": "resource", "resource": {
             "uri": "test://embedded-resource", "mimeType": "text/plain",
             "text": "This is an embedded resource content."}}]}))
    tool("test_multiple_content_types", description="Returns text, image and resource content",
         input_schema=NO_ARGS,
         handler=lambda ctx: Raw({"content": [
             {"type": "text", "text": "Multiple content types test:"},
             {"type": "image", "data": PNG, "mimeType": "image/png"},
             {"type": "resource", "resource": {"uri": "test://mixed-content-resource",
                                               "mimeType": "application/json",
                                               "text": json.dumps({"test": "data", "value": 123})}}]}))
    tool("test_tool_with_logging", description="Runs and returns text (logs only when asked by logLevel)",
         input_schema=NO_ARGS, handler=lambda ctx: _text("Tool with logging executed."))
    tool("test_logging_tool", description="Runs and returns text (logs only when asked by logLevel)",
         input_schema=NO_ARGS, handler=lambda ctx: _text("Logging tool executed."))
    tool("test_tool_with_progress", description="Runs and returns text (the room sends no progress)",
         input_schema=NO_ARGS, handler=lambda ctx: _text("Tool with progress executed."))
    tool("test_error_handling", description="Always returns a tool error", input_schema=NO_ARGS,
         handler=lambda ctx: Raw({"isError": True, "content": [
             {"type": "text", "text": "This tool intentionally returns an error for testing"}]}))
    tool("test_missing_capability", description="Needs the client's sampling capability",
         input_schema=NO_ARGS, handler=missing_capability_tool)
    tool("test_streaming_elicitation", description="Asks the client a question (input_required)",
         input_schema=NO_ARGS, handler=streaming_elicitation_tool)
    tool("test_trigger_tool_change", description="No-op: the room's tool list never changes",
         input_schema=NO_ARGS, handler=lambda ctx: _text("The tool list is fixed; nothing changed."))
    tool("test_trigger_prompt_change", description="No-op: the room's prompt list never changes",
         input_schema=NO_ARGS, handler=lambda ctx: _text("The prompt list is fixed; nothing changed."))

    tool("test_input_required_result_elicitation", description="Asks for the user's name (elicitation)",
         input_schema=NO_ARGS, handler=elicitation_tool)
    tool("test_input_required_result_sampling", description="Asks the client's model a question (sampling)",
         input_schema=NO_ARGS, handler=sampling_tool)
    tool("test_input_required_result_list_roots", description="Asks for the client's roots",
         input_schema=NO_ARGS, handler=list_roots_tool)
    tool("test_input_required_result_request_state", description="Round-trips a signed requestState",
         input_schema=NO_ARGS, handler=request_state_tool)
    tool("test_input_required_result_multiple_inputs", description="Asks three questions at once",
         input_schema=NO_ARGS, handler=multiple_inputs_tool)
    tool("test_input_required_result_multi_round", description="Asks two questions, one round each",
         input_schema=NO_ARGS, handler=multi_round_tool)
    tool("test_input_required_result_tampered_state", description="Refuses a tampered requestState",
         input_schema=NO_ARGS, handler=tampered_state_tool)
    tool("test_input_required_result_capabilities", description="Asks only what the client declared",
         input_schema=NO_ARGS, handler=capabilities_tool)

    # Pending (unscored) scenarios, run for visibility.
    tool("json_schema_2020_12_tool", description="Tool with JSON Schema 2020-12 features",
         input_schema={
             "$schema": "https://json-schema.org/draft/2020-12/schema",
             "type": "object",
             "$defs": {"address": {"$anchor": "addressDef", "type": "object",
                                   "properties": {"street": {"type": "string"}, "city": {"type": "string"}}}},
             "properties": {"name": {"type": "string"}, "address": {"$ref": "#/$defs/address"},
                            "contactMethod": {"type": "string", "enum": ["phone", "email"]},
                            "phone": {"type": "string"}, "email": {"type": "string"}},
             "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
             "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
             "then": {"required": ["phone"]},
             "else": {"required": ["email"]},
             "additionalProperties": False,
         },
         handler=lambda ctx: _text("Schema accepted: " + json.dumps(ctx.arguments, sort_keys=True)))
    tool("test_header_params", description="Echoes arguments mirrored into Mcp-Param headers",
         input_schema={"type": "object",
                       "properties": {"region": {"type": "string", "x-mcp-header": "Region"},
                                      "query": {"type": "string"}},
                       "required": ["region"]},
         handler=lambda ctx: _text(f"region={ctx.arguments.get('region')}"))
    # Tasks extension scenarios (unscored): the synchronous fixture, then the task-running ones.
    tool("greet", description="Greets someone by name",
         input_schema={"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]},
         handler=lambda ctx: _text(f"Hello, {ctx.arguments['name']}!"))
    from .task_fixtures import register_task_tools  # they build on the helpers here

    register_task_tools(registry)

    registry.add_resource("test://static-text", name="static-text", mime_type="text/plain",
                          description="A static text resource",
                          read=lambda ctx: "This is the content of the static text resource.")
    registry.add_resource("test://static-binary", name="static-binary", mime_type="image/png",
                          description="A static binary resource (a 1x1 PNG)",
                          read=lambda ctx: base64.b64decode(PNG))
    registry.add_resource("test://watched-resource", name="watched-resource", mime_type="text/plain",
                          description="A resource clients may watch", read=lambda ctx: "Watched resource content.")
    registry.add_template("test://template/{id}/data", name="template-data", mime_type="application/json",
                          description="Data for one id",
                          read=lambda ctx: json.dumps({"id": ctx.variables["id"], "templateTest": True,
                                                       "data": f"Data for ID: {ctx.variables['id']}"}))

    registry.add_prompt("test_simple_prompt", description="A simple prompt without arguments", arguments=[],
                        get=lambda ctx: [{"role": "user", "content": {
                            "type": "text", "text": "This is a simple prompt for testing."}}])
    registry.add_prompt("test_prompt_with_arguments", description="A prompt with two required arguments",
                        arguments=[{"name": "arg1", "description": "First test argument", "required": True},
                                   {"name": "arg2", "description": "Second test argument", "required": True}],
                        get=lambda ctx: [{"role": "user", "content": {"type": "text", "text": (
                            f"Prompt with arguments: arg1='{ctx.arguments['arg1']}', "
                            f"arg2='{ctx.arguments['arg2']}'")}}])
    registry.add_prompt("test_prompt_with_embedded_resource", description="A prompt embedding a resource",
                        arguments=[{"name": "resourceUri", "description": "URI of the resource to embed",
                                    "required": True}],
                        get=lambda ctx: [
                            {"role": "user", "content": {"type": "resource", "resource": {
                                "uri": ctx.arguments["resourceUri"], "mimeType": "text/plain",
                                "text": "Embedded resource content for testing."}}},
                            {"role": "user", "content": {"type": "text",
                                                         "text": "Please process the embedded resource above."}}])
    registry.add_prompt("test_prompt_with_image", description="A prompt with an image", arguments=[],
                        get=lambda ctx: [
                            {"role": "user", "content": {"type": "image", "data": PNG, "mimeType": "image/png"}},
                            {"role": "user", "content": {"type": "text", "text": "Please analyze the image above."}}])
    registry.add_prompt("test_input_required_result_prompt", description="A prompt that asks for context first",
                        arguments=[], get=input_required_prompt)
