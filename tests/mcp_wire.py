"""Raw MCP 2026-07-28 requests for the end-to-end tests (httpx, no SDK).

:class:`Mcp` builds a well-formed request (headers mirrored from the body,
``_meta`` filled in) that a test then bends: drop a header, change a value,
omit ``_meta``. Every answer comes back as the ``httpx.Response``.
"""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass, field
from typing import Any

import httpx

from commonroom.protocol import (
    BASE64_HEAD,
    BASE64_TAIL,
    JSON_TYPE,
    MCP_POST_ACCEPT,
    META_CAPABILITIES,
    META_CLIENT_INFO,
    META_VERSION,
    METHOD_HEADER,
    NAME_HEADER,
    NAME_PARAMS,
    VERSION_HEADER,
)
from commonroom.protocol import MCP_VERSION as VERSION

META = {
    META_VERSION: VERSION,
    META_CAPABILITIES: {},
    META_CLIENT_INFO: {"name": "commonroom-tests", "version": "1"},
}
_ids = itertools.count(1)


@dataclass
class Mcp:
    """Requests to one room's ``/mcp`` with one bearer (``None``: no Authorization)."""

    base: str
    token: str | None
    timeout: float = 30.0
    client: httpx.Client = field(default_factory=lambda: httpx.Client(timeout=30.0))

    @property
    def url(self) -> str:
        return self.base + "/mcp"

    def headers(self, method: str, params: dict[str, Any] | None) -> dict[str, str]:
        """The standard headers a correct client sends for ``method``."""
        out = {"Content-Type": JSON_TYPE, "Accept": MCP_POST_ACCEPT, VERSION_HEADER: VERSION, METHOD_HEADER: method}
        if self.token:
            out["Authorization"] = f"Bearer {self.token}"
        name = NAME_PARAMS.get(method)
        if name and params and isinstance(params.get(name), str):
            value = params[name]
            out[NAME_HEADER] = value if value.isascii() and value.isprintable() else encode(value)
        return out

    def body(self, method: str, params: dict[str, Any] | None = None, *, id: Any = "auto",
             meta: dict[str, Any] | None | str = "auto") -> dict[str, Any]:
        """A JSON-RPC request; ``meta=None`` leaves ``_meta`` out, ``id=None`` makes a notification."""
        message: dict[str, Any] = {"jsonrpc": "2.0"}
        if id is not None:
            message["id"] = next(_ids) if id == "auto" else id
        message["method"] = method
        full = dict(params or {})
        if meta == "auto":
            full["_meta"] = dict(META)
        elif meta is not None:
            full["_meta"] = meta
        message["params"] = full
        return message

    def post(self, method: str, params: dict[str, Any] | None = None, *, headers: dict[str, str | None] | None = None,
             body: Any = None, raw: bytes | None = None, **body_options: Any) -> httpx.Response:
        """POST one request; ``headers`` entries override (``None`` removes one)."""
        sent = self.headers(method, params)
        for name, value in (headers or {}).items():
            for existing in [k for k in sent if k.lower() == name.lower()]:
                del sent[existing]
            if value is not None:
                sent[name] = value
        if raw is None:
            message = body if body is not None else self.body(method, params, **body_options)
            raw = json.dumps(message).encode()
        return self.client.post(self.url, content=raw, headers=sent, timeout=self.timeout)

    def result(self, method: str, params: dict[str, Any] | None = None, **kwargs: Any) -> dict[str, Any]:
        """POST and return ``result`` (asserting HTTP 200 and no error)."""
        response = self.post(method, params, **kwargs)
        assert response.status_code == 200, (response.status_code, response.text)
        data = response.json()
        assert "error" not in data, data
        return data["result"]

    def call_tool(self, name: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
        """``tools/call`` result (the CallToolResult object)."""
        return self.result("tools/call", {"name": name, "arguments": arguments or {}})

    def close(self) -> None:
        self.client.close()


def encode(value: str) -> str:
    """The ``=?base64?…?=`` form of a header value (always wrapped, even a plain one).

    Unlike :func:`commonroom.protocol.encode_header_value`, which wraps only
    what is not header-safe, the tests wrap on purpose.
    """
    import base64

    return BASE64_HEAD + base64.b64encode(value.encode("utf-8")).decode("ascii") + BASE64_TAIL


def rpc_error(response: httpx.Response) -> dict[str, Any]:
    """The JSON-RPC ``error`` object of a response."""
    data = response.json()
    assert "error" in data, data
    return data["error"]


def raw_post(base: str, headers: list[tuple[str, str]], body: bytes) -> tuple[int, bytes]:
    """POST /mcp over a plain socket with headers written byte for byte.

    For what httpx refuses to send (blanks around a value, odd names).
    Returns ``(status, body)``; the answer is read until the server closes.
    """
    import socket
    from urllib.parse import urlsplit

    parts = urlsplit(base)
    lines = [b"POST /mcp HTTP/1.1", f"Host: {parts.hostname}:{parts.port}".encode(), b"Connection: close",
             f"Content-Length: {len(body)}".encode()]
    lines += [f"{name}:{value}".encode("latin-1") for name, value in headers]
    with socket.create_connection((parts.hostname, parts.port), timeout=30) as sock:
        sock.sendall(b"\r\n".join(lines) + b"\r\n\r\n" + body)
        chunks = []
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                break
            chunks.append(chunk)
    data = b"".join(chunks)
    head, _, rest = data.partition(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1])
    if b"transfer-encoding: chunked" in head.lower():
        body_out, remaining = b"", rest
        while remaining:
            size_line, _, remaining = remaining.partition(b"\r\n")
            size = int(size_line, 16)
            if size == 0:
                break
            body_out += remaining[:size]
            remaining = remaining[size + 2:]
        rest = body_out
    return status, rest
