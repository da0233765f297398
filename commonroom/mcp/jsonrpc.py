"""JSON-RPC 2.0 framing for MCP 2026-07-28: messages, error objects, HTTP statuses.

An MCP failure that is not a tool result is a :class:`JsonRpcError`. It
carries the JSON-RPC ``code``/``message``/``data`` and the HTTP status the
transport answers with. The statuses (docs/mcp.md, "Error statuses"):

=======  ===========================================  =====
code     meaning                                      HTTP
=======  ===========================================  =====
-32700   parse error (body is not JSON)               400
-32600   invalid request (not one JSON-RPC request)   400
-32601   method not found (removed methods too)       404
-32602   ``_meta`` or a required ``_meta`` field       400
-32602   other invalid params (unknown tool, unknown  200
         resource, unknown prompt, bad cursor)
-32603   internal error                               500
-32020   HeaderMismatch (missing/mismatched header)   400
-32021   MissingRequiredClientCapability              400
-32022   UnsupportedProtocolVersionError              400
=======  ===========================================  =====

Ordinary errors are 200 because the TypeScript SDK reads JSON-RPC error
bodies only from 200 and 400 (shared/notes/interop.md).
"""

from __future__ import annotations

from typing import Any

# The revision, error codes and ``_meta`` keys are written once, in
# :mod:`commonroom.protocol`; they are re-exported here for the adapter.
from ..protocol import (  # noqa: F401  (re-exported)
    HEADER_MISMATCH,
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    META_CAPABILITIES,
    META_CLIENT_INFO,
    META_LOG_LEVEL,
    META_SERVER_INFO,
    META_SUBSCRIPTION_ID,
    META_VERSION,
    METHOD_NOT_FOUND,
    MISSING_CAPABILITY,
    PARSE_ERROR,
    UNSUPPORTED_VERSION,
)
from ..protocol import MCP_SUPPORTED_VERSIONS as SUPPORTED_VERSIONS  # noqa: F401
from ..protocol import MCP_VERSION as PROTOCOL_VERSION  # noqa: F401


class JsonRpcError(Exception):
    """A JSON-RPC error answer with its HTTP ``status``."""

    def __init__(self, code: int, message: str, data: Any = None, *, status: int = 200):
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data
        self.status = status

    def to_dict(self) -> dict[str, Any]:
        """The JSON-RPC ``error`` member."""
        out: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            out["data"] = self.data
        return out


def header_mismatch(header: str, reason: str, **extra: Any) -> JsonRpcError:
    """400 / -32020 ``HeaderMismatch`` naming the header and why."""
    return JsonRpcError(HEADER_MISMATCH, "HeaderMismatch",
                        {"header": header, "reason": reason, **extra}, status=400)


def unsupported_version(requested: Any) -> JsonRpcError:
    """400 / -32022 ``UnsupportedProtocolVersionError`` (data.supported, data.requested)."""
    return JsonRpcError(UNSUPPORTED_VERSION, "UnsupportedProtocolVersionError",
                        {"supported": list(SUPPORTED_VERSIONS), "requested": str(requested)}, status=400)


def method_not_found(method: str) -> JsonRpcError:
    """404 / -32601 for an unknown or removed method."""
    return JsonRpcError(METHOD_NOT_FOUND, "Method not found", {"method": method}, status=404)


def invalid_params(message: str, data: Any = None, *, status: int = 200) -> JsonRpcError:
    """-32602; 200 unless the transport fixes another status (400 for ``_meta``)."""
    return JsonRpcError(INVALID_PARAMS, message, data, status=status)


def missing_capability(required: dict[str, Any]) -> JsonRpcError:
    """400 / -32021 with ``data.requiredCapabilities`` (a ClientCapabilities object)."""
    return JsonRpcError(MISSING_CAPABILITY, "MissingRequiredClientCapability",
                        {"requiredCapabilities": required}, status=400)


def invalid_request(reason: str) -> JsonRpcError:
    """400 / -32600: the body is not one JSON-RPC request or notification."""
    return JsonRpcError(INVALID_REQUEST, "Invalid Request", {"reason": reason}, status=400)


def parse_error(reason: str) -> JsonRpcError:
    """400 / -32700: the body is not JSON."""
    return JsonRpcError(PARSE_ERROR, "Parse error", {"reason": reason}, status=400)


def internal_error() -> JsonRpcError:
    """500 / -32603 for a bug; details go to the log, not the wire."""
    return JsonRpcError(INTERNAL_ERROR, "Internal error", status=500)


def result_response(request_id: Any, result: dict[str, Any]) -> dict[str, Any]:
    """``JSONRPCResultResponse``."""
    return {"jsonrpc": "2.0", "id": request_id, "result": result}


def error_response(request_id: Any, error: JsonRpcError) -> dict[str, Any]:
    """``JSONRPCErrorResponse``; ``id`` omitted when unknown (not null)."""
    out: dict[str, Any] = {"jsonrpc": "2.0"}
    if request_id is not None:
        out["id"] = request_id
    out["error"] = error.to_dict()
    return out


def notification(method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    """``JSONRPCNotification``."""
    out: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        out["params"] = params
    return out


def is_request_id(value: Any) -> bool:
    """A valid JSON-RPC id for a request: a string or an integer (never bool)."""
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))
