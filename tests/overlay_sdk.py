"""Run on "the other machine" by tests/e2e/test_tailcat_overlay.py: the official MCP SDK straight to a room.

``python tests/overlay_sdk.py URL`` with the session's bearer on stdin:
``Client(streamable_http_client(URL, http_client=...), mode="2026-07-28")``
calls ``document_read`` and prints its result as JSON on stdout.
"""

from __future__ import annotations

import asyncio
import json
import sys

import httpx2
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client

MCP_VERSION = "2026-07-28"


async def main(url: str, token: str) -> None:
    """Connect, call ``document_read``, print the result."""
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=30)
    async with http, Client(streamable_http_client(url, http_client=http), mode=MCP_VERSION) as client:
        result = await client.call_tool("document_read", {})
        print(json.dumps(result.model_dump(mode="json")))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.stdin.read().strip()))
