"""``ce mcp``: the stdio MCP server for desktop clients, as a real subprocess.

A real room (``ce serve``) on a corpus document; ``ce join`` stores a
session; ``ce mcp --session-file`` is started with pipes and spoken to in
newline-delimited JSON-RPC exactly as a desktop client would. Every message
read from its stdout is checked against the official 2026-07-28 schema.
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from commonroom.protocol import MCP_VERSION, META_CAPABILITIES, META_CLIENT_INFO, META_VERSION
from tests.mcp_schema import check as validate
from tests.roomproc import CORPUS, ce, ce_path, start_room

VERSION = MCP_VERSION
DOC = CORPUS / "cmark-README.md"


def meta(version: str = VERSION, **caps: Any) -> dict[str, Any]:
    return {META_VERSION: version,
            META_CAPABILITIES: caps,
            META_CLIENT_INFO: {"name": "ce-mcp-test", "version": "1"}}


class McpProcess:
    """``ce mcp`` with pipes: send lines, read stdout lines (JSON), collect stderr."""

    def __init__(self, session_file: Path, *args: str):
        self.proc = subprocess.Popen([ce_path(), "mcp", "--session-file", str(session_file), *args],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.lines: "queue.Queue[bytes]" = queue.Queue()
        self.stderr: list[str] = []
        self.raw_stdout: list[bytes] = []
        threading.Thread(target=self._pump_out, daemon=True).start()
        threading.Thread(target=self._pump_err, daemon=True).start()
        self._next = 0

    def _pump_out(self) -> None:
        for line in iter(self.proc.stdout.readline, b""):
            self.raw_stdout.append(line)
            self.lines.put(line)

    def _pump_err(self) -> None:
        for line in iter(self.proc.stderr.readline, b""):
            self.stderr.append(line.decode("utf-8", "replace"))

    def send_raw(self, data: bytes) -> None:
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def send(self, message: dict[str, Any]) -> None:
        self.send_raw(json.dumps(message, ensure_ascii=False).encode("utf-8") + b"\n")

    def request(self, method: str, params: dict[str, Any] | None = None, *, request_id: Any = None,
                version: str = VERSION) -> Any:
        if request_id is None:
            self._next += 1
            request_id = self._next
        body = dict(params or {})
        body.setdefault("_meta", meta(version))
        self.send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": body})
        return request_id

    def recv(self, timeout: float = 15) -> dict[str, Any]:
        line = self.lines.get(timeout=timeout)
        assert line.endswith(b"\n") and line.count(b"\n") == 1, line
        return json.loads(line)

    def call(self, method: str, params: dict[str, Any] | None = None, **kw: Any) -> dict[str, Any]:
        request_id = self.request(method, params, **kw)
        message = self.recv()
        assert message.get("id") == request_id, message
        return message

    def wait_stderr(self, text: str, timeout: float = 15) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if any(text in line for line in self.stderr):
                return
            time.sleep(0.05)
        raise AssertionError(f"{text!r} never appeared on stderr: {self.stderr}")

    def close(self, timeout: float = 15) -> int:
        if self.proc.poll() is None:
            try:
                self.proc.stdin.close()
            except OSError:
                pass
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        return self.proc.returncode


def check_wire(message: dict[str, Any], result_def: str | None = None) -> None:
    """The message is a valid JSON-RPC message of the official schema."""
    if "method" in message:
        validate("JSONRPCNotification", message)
    elif "error" in message:
        validate("JSONRPCErrorResponse", message)
    else:
        validate("JSONRPCResultResponse", message)
        if result_def:
            validate(result_def, message["result"])


@pytest.fixture(scope="module")
def room(tmp_path_factory):
    r = start_room(tmp_path_factory.mktemp("ce-mcp"), DOC)
    yield r
    r.stop()


def joined(room, folder: Path, name: str, caps: str) -> Path:
    """``ce join`` a fresh invitation; the session file it wrote."""
    token = room.invite(name, caps)
    session_file = folder / f"{name}.session.json"
    result = ce("join", token, "--session-file", str(session_file))
    assert result.returncode == 0, result.stderr
    return session_file


@pytest.fixture
def bridge(room, tmp_path):
    proc = McpProcess(joined(room, tmp_path, "desk", "read,observe,propose,write"))
    yield proc
    proc.close()
    for line in proc.raw_stdout:  # stdout carries protocol messages only
        message = json.loads(line)
        assert message.get("jsonrpc") == "2.0", line
        check_wire(message)


def test_discover_and_catalog(bridge):
    discover = bridge.call("server/discover")
    check_wire(discover, "DiscoverResult")
    assert discover["result"]["supportedVersions"] == [VERSION]

    tools = bridge.call("tools/list")
    check_wire(tools, "ListToolsResult")
    names = {tool["name"] for tool in tools["result"]["tools"]}
    assert "document_read" in names

    resources = bridge.call("resources/list")
    check_wire(resources, "ListResourcesResult")
    prompts = bridge.call("prompts/list")
    check_wire(prompts, "ListPromptsResult")


def test_tool_call_reads_the_document(bridge, room):
    answer = bridge.call("tools/call", {"name": "document_read", "arguments": {}})
    check_wire(answer, "CallToolResult")
    result = answer["result"]
    assert result["isError"] is False
    # the head as the room has it now (another test of this module's room may have committed since it began)
    assert result["structuredContent"]["text"] == room.operator().get("/workspace/document").json()["text"]
    assert result["structuredContent"]["text"].startswith(DOC.read_text("utf-8"))
    assert json.loads(result["content"][0]["text"]) == result["structuredContent"]


def test_resource_read(bridge):
    answer = bridge.call("resources/read", {"uri": "commonroom://workspace/document"})
    check_wire(answer, "ReadResourceResult")
    assert answer["result"]["contents"][0]["uri"] == "commonroom://workspace/document"


def test_non_ascii_names_are_base64_wrapped(bridge):
    # The room answers "unknown" (-32602), not HeaderMismatch (-32020): the
    # Mcp-Name header carried the non-ASCII name, base64-wrapped, intact.
    tool = bridge.call("tools/call", {"name": "wérkzeug ✓", "arguments": {}})
    check_wire(tool)
    assert tool["error"]["code"] == -32602, tool
    resource = bridge.call("resources/read", {"uri": "commonroom://workspace/dökument"})
    check_wire(resource)
    assert resource["error"]["code"] == -32602, resource
    # A plain value with blanks around it is wrapped too (else they would be stripped).
    spaced = bridge.call("prompts/get", {"name": " padded "})
    check_wire(spaced)
    assert spaced["error"]["code"] == -32602, spaced


def test_errors_are_forwarded_with_their_id(bridge):
    unknown = bridge.call("no/such/method", request_id="a-string-id")
    check_wire(unknown)
    assert unknown["id"] == "a-string-id" and unknown["error"]["code"] == -32601

    old = bridge.call("tools/list", version="2025-11-25")
    check_wire(old)
    assert old["error"]["code"] == -32022
    assert old["error"]["data"] == {"supported": [VERSION], "requested": "2025-11-25"}

    big = 2**62 + 7
    listed = bridge.call("tools/list", request_id=big)
    assert listed["id"] == big and "result" in listed


def test_notification_writes_nothing(bridge):
    bridge.send({"jsonrpc": "2.0", "method": "notifications/progress",
                 "params": {"progressToken": "x", "progress": 1}})
    request_id = bridge.request("server/discover")
    first = bridge.recv()
    assert first["id"] == request_id, first  # nothing came before the request's answer


def test_bad_lines_get_jsonrpc_errors(bridge):
    bridge.send_raw(b"{not json\n")
    parse = bridge.recv()
    assert parse["error"]["code"] == -32700 and "id" not in parse
    bridge.send_raw(b"[1, 2]\n")
    invalid = bridge.recv()
    assert invalid["error"]["code"] == -32600
    bridge.send_raw(b"\n")  # blank lines are ignored
    assert bridge.call("server/discover")["result"]


def test_concurrent_requests(bridge):
    ids = [bridge.request("tools/call", {"name": "document_read", "arguments": {}}) for _ in range(8)]
    ids += [bridge.request("resources/list") for _ in range(4)]
    seen = {bridge.recv()["id"] for _ in ids}
    assert seen == set(ids)


def test_resource_updates_arrive_from_get_mcp(bridge, room):
    bridge.wait_stderr("notification stream open")
    uri = "commonroom://workspace/document"
    subscribed = bridge.call("resources/subscribe", {"uri": uri})
    assert "result" in subscribed, subscribed
    writer = room.join("writer", "read,write")
    head = writer.get("/workspace/document").json()
    r = writer.request("PUT", "/workspace/document",
                       json={"expected_version": head["version"], "text": head["text"] + "\nAppended by a test.\n"})
    assert r.status_code == 200, r.text
    deadline = time.monotonic() + 15
    while True:
        message = bridge.recv(max(0.1, deadline - time.monotonic()))
        check_wire(message)
        if message.get("method") == "notifications/resources/updated" and message["params"]["uri"] == uri:
            validate("ResourceUpdatedNotification", message)
            break


def test_stdin_eof_exits_cleanly(room, tmp_path):
    proc = McpProcess(joined(room, tmp_path, "short", "read"))
    assert proc.call("server/discover")["result"]
    assert proc.close() == 0
    assert all(json.loads(line)["jsonrpc"] == "2.0" for line in proc.raw_stdout)
    assert any("serving MCP on stdio" in line for line in proc.stderr)


def test_unreachable_room_answers_each_request(tmp_path):
    session_file = tmp_path / "dead.session.json"
    with socket_closed_port() as port:
        session_file.write_text(json.dumps({
            "token": "crs_dead", "transport": {"type": "loopback", "address": "127.0.0.1", "port": port,
                                                "encrypted": False, "mode": "private"}}))
        proc = McpProcess(session_file, "--no-notifications")
        try:
            answer = proc.call("tools/list", request_id=41)
            check_wire(answer)
            assert answer["id"] == 41 and answer["error"]["code"] == -32603
            assert answer["error"]["data"]["error"] == "transport_unavailable"
            proc.send({"jsonrpc": "2.0", "method": "notifications/progress", "params": {}})
            assert proc.call("tools/list", request_id=42)["id"] == 42  # still serving
        finally:
            assert proc.close() == 0


def test_revoked_session_gets_errors_not_silence(room, tmp_path):
    session_file = joined(room, tmp_path, "leaver", "read")
    session_id = json.loads(session_file.read_text())["session_id"]
    proc = McpProcess(session_file, "--no-notifications")
    try:
        assert "result" in proc.call("server/discover")
        r = room.operator().post("/owner/revoke", {"session": session_id})
        assert r.status_code == 200, r.text
        answer = proc.call("tools/list", request_id="after-revoke")
        check_wire(answer)
        assert answer["id"] == "after-revoke" and "error" in answer
    finally:
        proc.close()


class socket_closed_port:
    """A loopback port nobody listens on (bound then closed)."""

    def __enter__(self) -> int:
        import socket

        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        self.port = sock.getsockname()[1]
        sock.close()
        return self.port

    def __exit__(self, *exc: Any) -> None:
        return None


def test_x_mcp_header_arguments_are_mirrored(tmp_path, monkeypatch):
    """A tool whose inputSchema marks an argument ``x-mcp-header`` gets its ``Mcp-Param-*`` header.

    The room checks the header against the argument (400/-32020 when absent
    or different), so a successful call shows ce mcp mirrored it, base64-
    wrapping the non-ASCII value. The tool is the conformance fixture's.
    """
    from tests.roomproc import ROOT

    monkeypatch.setenv("COMMONROOM_MCP_PLUGINS", "tests.conformance.mcp.fixtures:register")
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    fixture_room = start_room(tmp_path / "room", DOC)
    try:
        proc = McpProcess(joined(fixture_room, tmp_path, "params", "read"), "--no-notifications")
        try:
            for region in ("us-east1", "Zürich ☂", " padded "):
                answer = proc.call("tools/call", {"name": "test_header_params",
                                                  "arguments": {"region": region, "query": "q"}})
                check_wire(answer, "CallToolResult")
                assert answer["result"]["content"][0]["text"] == f"region={region}", answer
        finally:
            proc.close()
    finally:
        fixture_room.stop()


def test_a_listen_stream_is_forwarded_until_cancelled(bridge, room):
    participants = "commonroom://workspace/participants"
    request_id = bridge.request("subscriptions/listen", {"notifications": {"resourceSubscriptions": [participants]}},
                                request_id="listen-1")
    tag = {"io.modelcontextprotocol/subscriptionId": request_id}

    def next_tagged() -> dict[str, Any]:
        deadline = time.monotonic() + 15
        while True:
            message = bridge.recv(max(0.1, deadline - time.monotonic()))
            check_wire(message)
            if (message.get("params") or {}).get("_meta") == tag:
                return message

    ack = next_tagged()
    validate("SubscriptionsAcknowledgedNotification", ack)
    assert ack["params"]["notifications"] == {"resourceSubscriptions": [participants]}
    room.join("listen-newcomer", "read")
    updated = next_tagged()
    assert updated["method"] == "notifications/resources/updated" and updated["params"]["uri"] == participants
    bridge.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": request_id}})
    bridge.wait_stderr("cancelled by the client")
    assert bridge.call("server/discover")["result"]  # still answering; nothing more for listen-1
    room.join("listen-late", "read")
    time.sleep(0.5)
    while not bridge.lines.empty():
        message = json.loads(bridge.lines.get())
        assert message.get("id") != request_id and (message.get("params") or {}).get("_meta") != tag, message


def room_connections(pid: int, port: int) -> int:
    """How many established TCP connections process ``pid`` holds to local ``port`` (from /proc)."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    count = 0
    for table in ("tcp", "tcp6"):
        for row in Path(f"/proc/{pid}/net/{table}").read_text().splitlines()[1:]:
            fields = row.split()
            remote, state, inode = fields[2], fields[3], fields[9]
            if state == "01" and inode in inodes and int(remote.rsplit(":", 1)[1], 16) == port:
                count += 1
    return count


def observation(bridge: McpProcess, session_id: str, **arguments: Any) -> Any:
    """Send one ``observe_session_messages`` call on ``session_id``'s board; its request id."""
    return bridge.request("tools/call", {"name": "observe_session_messages",
                                         "arguments": {"session_id": session_id, **arguments}})


def test_a_cancelled_long_poll_releases_its_room_connection(room, tmp_path):
    session_file = joined(room, tmp_path, "poller", "read")
    session_id = json.loads(session_file.read_text())["session_id"]
    bridge = McpProcess(session_file, "--no-notifications")
    try:
        observation(bridge, session_id)
        token = bridge.recv()["result"]["structuredContent"]["observation_token"]
        port = room.state["ingress"]["port"]
        polling = observation(bridge, session_id, after_observation_token=token, wait_seconds=30)
        deadline = time.monotonic() + 10
        while room_connections(bridge.proc.pid, port) != 1:  # the long-poll waits in the room
            assert time.monotonic() < deadline, "the long-poll never reached the room"
            time.sleep(0.05)
        bridge.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": polling}})
        deadline = time.monotonic() + 5  # well before the 30 s wait ends
        while room_connections(bridge.proc.pid, port):
            assert time.monotonic() < deadline, "the cancelled long-poll still holds its connection"
            time.sleep(0.05)
        assert bridge.call("server/discover")["result"]  # still serving; nothing came for the cancelled one
        assert bridge.close() == 0
        assert all(json.loads(line).get("id") != polling for line in bridge.raw_stdout)
    finally:
        bridge.close()


def test_every_request_read_before_stdin_closed_is_answered(room, tmp_path):
    session_file = joined(room, tmp_path, "closer", "read")
    session_id = json.loads(session_file.read_text())["session_id"]
    bridge = McpProcess(session_file, "--no-notifications")
    try:
        baseline = observation(bridge, session_id)
        token = bridge.recv()["result"]["structuredContent"]["observation_token"]
        polling = observation(bridge, session_id, after_observation_token=token, wait_seconds=2)
        listening = bridge.request("subscriptions/listen",
                                   {"notifications": {"resourceSubscriptions": ["commonroom://workspace/status"]}},
                                   request_id="listen-at-eof")
        discover = bridge.request("server/discover")
        bridge.proc.stdin.close()  # in flight: the long-poll, the listen and perhaps discover
        assert bridge.proc.wait(20) == 0
        time.sleep(0.2)
        answers = {}
        for line in bridge.raw_stdout:
            message = json.loads(line)
            check_wire(message)
            if "method" not in message:
                answers[json.dumps(message["id"])] = message
        assert set(answers) == {json.dumps(i) for i in (baseline, polling, listening, discover)}, answers
        assert answers[json.dumps(polling)]["result"]["structuredContent"]["wait_outcome"] == "timeout"
        # a listen ends as a server ends a subscription on purpose: its result, naming the subscription
        assert answers[json.dumps(listening)]["result"] == {
            "resultType": "complete", "_meta": {"io.modelcontextprotocol/subscriptionId": "listen-at-eof"}}
    finally:
        bridge.close()


def test_a_request_the_room_never_answers_gets_an_error_and_status_1(room, tmp_path):
    session_file = joined(room, tmp_path, "hasty", "read")
    session_id = json.loads(session_file.read_text())["session_id"]
    bridge = McpProcess(session_file, "--no-notifications", "--timeout", "1")
    try:
        observation(bridge, session_id)
        token = bridge.recv()["result"]["structuredContent"]["observation_token"]
        polling = observation(bridge, session_id, after_observation_token=token, wait_seconds=20)
        bridge.proc.stdin.close()
        assert bridge.proc.wait(20) in (0, 1)
        time.sleep(0.2)
        answer = [json.loads(line) for line in bridge.raw_stdout if json.loads(line).get("id") == polling]
        assert len(answer) == 1 and answer[0]["error"]["code"] == -32603, answer
    finally:
        bridge.close()
