"""The MCP standard headers (Streamable HTTP, 2026-07-28) and the request checks.

- Header names are case-insensitive (callers pass a lower-cased mapping).
- A value may be sent as ``=?base64?<base64 of UTF-8>?=``; it is decoded
  before any comparison. Leading and trailing blanks (OWS) are tolerated.
- A value with characters outside visible ASCII, space and tab, or a broken
  base64 form, is malformed: 400 / -32020.

:func:`check_request` applies the checks in the reference fixture's order
(shared/notes/mcp-2026-07-28.md §1):

1. a required header is missing (``MCP-Protocol-Version``, ``Mcp-Method``,
   ``Mcp-Name`` where the method names something) → 400 / -32020;
2. ``params._meta`` or its required fields missing (or a ``logLevel`` that
   is not a LoggingLevel) → 400 / -32602;
3. ``MCP-Protocol-Version`` differs from ``_meta`` → 400 / -32020;
4. the version is not 2026-07-28 → 400 / -32022;
5. ``Mcp-Method`` differs from ``method`` → 400 / -32020;
6. ``Mcp-Name`` differs from the named param → 400 / -32020.

:func:`check_param_headers` checks ``Mcp-Param-{Name}`` headers against the
tool arguments annotated ``x-mcp-header`` in the tool's ``inputSchema``.
"""

from __future__ import annotations

import re
from typing import Any, Mapping

from .. import protocol
from ..protocol import LOG_LEVELS, NAME_PARAMS, HeaderValueError, decode_header_value  # noqa: F401
from .jsonrpc import (
    META_CAPABILITIES,
    META_LOG_LEVEL,
    META_VERSION,
    PROTOCOL_VERSION,
    header_mismatch,
    invalid_params,
    unsupported_version,
)

#: Lower-cased header names (the transport passes a lower-cased mapping).
VERSION_HEADER = protocol.header_key(protocol.VERSION_HEADER)
METHOD_HEADER = protocol.header_key(protocol.METHOD_HEADER)
NAME_HEADER = protocol.header_key(protocol.NAME_HEADER)
PARAM_HEADER_PREFIX = protocol.header_key(protocol.PARAM_HEADER_PREFIX)

# NAME_PARAMS (method → the params field ``Mcp-Name`` mirrors) is
# :data:`commonroom.protocol.NAME_PARAMS`. The tasks extension adds
# ``tasks/get``, ``tasks/update`` and ``tasks/cancel`` → ``taskId``
# (:meth:`commonroom.mcp.registry.Registry.add_method`, ``name_param=``).


def decode_value(header: str, raw: str) -> str:
    """The header's value: blanks stripped, ``=?base64?…?=`` decoded.

    Raises 400 / -32020 for illegal characters or a broken base64 form
    (:func:`commonroom.protocol.decode_header_value`).
    """
    try:
        return decode_header_value(raw)
    except HeaderValueError as exc:
        raise header_mismatch(header, str(exc)) from None


def _get(headers: Mapping[str, str], name: str) -> str | None:
    raw = headers.get(name)
    return None if raw is None else decode_value(name, raw)


def check_request(message: dict[str, Any], headers: Mapping[str, str],
                  name_params: Mapping[str, str] = NAME_PARAMS,
                  optional_name_params: Mapping[str, str] | None = None) -> None:
    """Validate a request's headers against its body (order in module docstring).

    ``headers`` maps lower-cased names to raw values. ``optional_name_params``
    are methods whose ``Mcp-Name`` is checked only when sent (``skills/get``).
    Raises :class:`~commonroom.mcp.jsonrpc.JsonRpcError`.
    """
    method = message["method"]
    version_header = _get(headers, VERSION_HEADER)
    if version_header is None:
        raise header_mismatch(protocol.VERSION_HEADER, "missing")
    method_header = _get(headers, METHOD_HEADER)
    if method_header is None:
        raise header_mismatch(protocol.METHOD_HEADER, "missing")
    name_param = name_params.get(method)
    name_header = _get(headers, NAME_HEADER) if name_param else None
    if name_param and name_header is None:
        raise header_mismatch(protocol.NAME_HEADER, "missing", param=name_param)
    if not name_param and optional_name_params and method in optional_name_params:
        name_header = _get(headers, NAME_HEADER)
        if name_header is not None:
            name_param = optional_name_params[method]

    raw = message.get("params")
    params: dict[str, Any] = raw if isinstance(raw, dict) else {}
    meta = params.get("_meta")
    if not isinstance(meta, dict):
        raise invalid_params("params._meta is required", {"missing": "params._meta"}, status=400)
    for key in (META_VERSION, META_CAPABILITIES):
        if key not in meta:
            raise invalid_params(f"params._meta is missing {key}", {"missing": f"params._meta/{key}"},
                                 status=400)
    body_version = meta[META_VERSION]
    if not isinstance(body_version, str):
        raise invalid_params(f"{META_VERSION} must be a string", {"field": META_VERSION}, status=400)
    if not isinstance(meta[META_CAPABILITIES], dict):
        raise invalid_params(f"{META_CAPABILITIES} must be an object", {"field": META_CAPABILITIES},
                             status=400)
    if META_LOG_LEVEL in meta and meta[META_LOG_LEVEL] not in LOG_LEVELS:
        raise invalid_params(f"{META_LOG_LEVEL} must be one of {', '.join(LOG_LEVELS)}",
                             {"field": META_LOG_LEVEL}, status=400)

    if version_header != body_version:
        raise header_mismatch(protocol.VERSION_HEADER, "differs from params._meta protocolVersion",
                              header_value=version_header, body_value=body_version)
    if body_version != PROTOCOL_VERSION:
        raise unsupported_version(body_version)
    if method_header != method:
        raise header_mismatch(protocol.METHOD_HEADER, "differs from the method", header_value=method_header,
                              body_value=method)
    if name_param:
        body_name = params.get(name_param)
        if not isinstance(body_name, str) or body_name != name_header:
            raise header_mismatch(protocol.NAME_HEADER, f"differs from params.{name_param}",
                                  header_value=name_header, body_value=body_name)


def mcp_header_properties(input_schema: dict[str, Any]) -> dict[str, str]:
    """argument name → header name for top-level properties with ``x-mcp-header``."""
    return protocol.mirrored_arguments(input_schema)


_INTEGER = re.compile(r"-?[0-9]{1,20}")


def _same(header_value: str, argument: Any) -> bool:
    if isinstance(argument, bool):
        return header_value == ("true" if argument else "false")
    if isinstance(argument, int):
        # integers are compared numerically: ASCII digits with an optional sign, bounded
        return bool(_INTEGER.fullmatch(header_value)) and int(header_value) == argument
    return header_value == str(argument)


def check_param_headers(input_schema: dict[str, Any], arguments: Mapping[str, Any],
                        headers: Mapping[str, str]) -> None:
    """Each ``x-mcp-header`` argument present in the body has an equal header.

    A null or absent argument expects no header. Raises 400 / -32020.
    """
    for prop, name in mcp_header_properties(input_schema).items():
        value = arguments.get(prop)
        if value is None:
            continue
        header = protocol.param_header(name)
        got = _get(headers, PARAM_HEADER_PREFIX + name.lower())
        if got is None:
            raise header_mismatch(header, "missing", argument=prop)
        if not _same(got, value):
            raise header_mismatch(header, f"differs from arguments.{prop}", argument=prop)
