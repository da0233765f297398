"""The pure parts of ``ce mcp`` (commonroom.mcp_bridge): header values, headers, SSE parsing."""

from __future__ import annotations

import base64
import io
import json

from commonroom.mcp.headers import decode_value
from commonroom.mcp_bridge import mcp_headers, sse_messages
from commonroom.protocol import MCP_VERSION, META_CAPABILITIES, META_VERSION
from commonroom.protocol import encode_header_value as header_value
from commonroom.sse_client import iter_frames

META = {META_VERSION: MCP_VERSION, META_CAPABILITIES: {}}


def test_plain_values_stay_plain():
    for value in ("tools/call", "document_read", "commonroom://workspace/document", "a b", MCP_VERSION):
        assert header_value(value) == value


def test_unsafe_values_are_base64_wrapped_and_round_trip():
    for value in ("Zürich", "日本語", " lead", "trail ", "tab\there", "cr\r\nlf", "=?base64?abc?="):
        wrapped = header_value(value)
        assert wrapped.startswith("=?base64?") and wrapped.endswith("?=")
        assert wrapped.isascii() and "\n" not in wrapped
        assert base64.b64decode(wrapped[9:-2]).decode("utf-8") == value
        assert decode_value("mcp-name", wrapped) == value  # the room's decoder agrees


def test_headers_follow_the_message():
    message = {"jsonrpc": "2.0", "id": 1, "method": "resources/read",
               "params": {"uri": "commonroom://workspace/dökument", "_meta": META}}
    headers = mcp_headers(message)
    assert headers["MCP-Protocol-Version"] == MCP_VERSION
    assert headers["Mcp-Method"] == "resources/read"
    assert decode_value("mcp-name", headers["Mcp-Name"]) == "commonroom://workspace/dökument"
    assert "application/json" in headers["Accept"] and "text/event-stream" in headers["Accept"]


def test_version_comes_from_meta_and_names_only_where_the_revision_says():
    old = mcp_headers({"method": "tools/list", "params": {"_meta": {**META, META_VERSION: "2025-11-25"}}})
    assert old["MCP-Protocol-Version"] == "2025-11-25" and "Mcp-Name" not in old
    bare = mcp_headers({"method": "server/discover"})
    assert bare["MCP-Protocol-Version"] == MCP_VERSION
    task = mcp_headers({"method": "tasks/get", "params": {"taskId": "t-1", "_meta": META}})
    assert task["Mcp-Name"] == "t-1"
    injected = mcp_headers({"method": "x", "params": {"_meta": {**META, META_VERSION: "1\r\nX-Evil: 1"}}})
    assert "\r" not in injected["MCP-Protocol-Version"] and "\n" not in injected["MCP-Protocol-Version"]


def test_param_headers_mirror_annotated_arguments():
    message = {"method": "tools/call", "params": {"name": "t", "_meta": META,
                                                  "arguments": {"region": "Zürich", "n": 3, "flag": True,
                                                                "skip": None, "obj": {"a": 1}}}}
    headers = mcp_headers(message, {"region": "Region", "n": "N", "flag": "Flag", "skip": "Skip",
                                    "obj": "Obj", "absent": "Absent"})
    assert decode_value("mcp-param-region", headers["Mcp-Param-Region"]) == "Zürich"
    assert headers["Mcp-Param-N"] == "3" and headers["Mcp-Param-Flag"] == "true"
    assert not {"Mcp-Param-Skip", "Mcp-Param-Obj", "Mcp-Param-Absent"} & set(headers)


def test_sse_messages():
    retries = []
    body = ": heartbeat\n\nevent: message\ndata: {\"a\":\ndata: 1}\n\nretry: 5000\ndata: not json\n\n" \
           'data: {"b": 2}\n\ndata: {"unterminated": true}\n'
    assert list(sse_messages(iter_frames([body.encode()]), retries.append)) == [{"a": 1}, {"b": 2}]
    assert retries == [5000]


def test_notification_stream_reconnects_after_a_drop():
    """GET /mcp: each stream's notifications reach stdout; a dropped stream is reopened."""
    import http.server
    import io
    import json
    import threading
    import time

    from commonroom.mcp_bridge import Bridge

    served = []

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self):  # noqa: N802
            served.append(dict(self.headers))
            n = len(served)
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Connection", "close")
            self.end_headers()
            note = {"jsonrpc": "2.0", "method": "notifications/resources/updated",
                    "params": {"uri": f"commonroom://workspace/n{n}"}}
            self.wfile.write(b"retry: 50\n: heartbeat\n\nevent: message\ndata: " + json.dumps(note).encode() + b"\n\n")
            self.wfile.flush()
            self.close_connection = True

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()

    out = io.BytesIO()
    bridge = Bridge(transport={"type": "loopback", "address": "127.0.0.1", "port": server.server_address[1]},
                    token="crs_test", out=out)
    listener = threading.Thread(target=bridge.listen, daemon=True)
    listener.start()
    try:
        deadline = time.monotonic() + 10
        while out.getvalue().count(b"\n") < 2 and time.monotonic() < deadline:
            time.sleep(0.02)
    finally:
        bridge._stop.set()
        server.shutdown()
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    assert [m["params"]["uri"] for m in lines[:2]] == ["commonroom://workspace/n1", "commonroom://workspace/n2"]
    first = {k.lower(): v for k, v in served[0].items()}
    assert first["authorization"] == "Bearer crs_test"
    assert first["mcp-protocol-version"] == MCP_VERSION
    assert "text/event-stream" in first["accept"] and first["host"] == "commonroom"


def test_a_line_over_the_room_limit_is_answered_here_with_its_id():
    from commonroom.mcp_bridge import Bridge
    from commonroom.protocol import MAX_BODY_BYTES

    out = io.BytesIO()
    bridge = Bridge(transport={"type": "loopback", "address": "127.0.0.1", "port": 9, "encrypted": False,
                               "mode": "private"}, token="crs_x", out=out)
    big = json.dumps({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                      "params": {"name": "document_write", "arguments": {"text": "x" * MAX_BODY_BYTES}}})
    assert bridge.handle_line(big.encode()) is None
    answer = json.loads(out.getvalue())
    assert answer["id"] == 7 and answer["error"]["code"] == -31000  # as the room answers a 413
    assert answer["error"]["data"]["error"] == "limit_exceeded"
