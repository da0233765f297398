"""``ce mcp``'s forwarding: one stdin message POSTed to the room's ``/mcp``, its answer written to stdout.

Each message goes as is, with the bearer and the standard headers
(:func:`.messages.mcp_headers`, plus ``Mcp-Param-*`` from the called tool's
``x-mcp-header`` annotations, learnt from a ``tools/list``), through the
byte client (:mod:`commonroom.client`). A JSON answer is written as one
line, an event-stream answer message by message until the final response;
a transport error or an answer that is not JSON-RPC (a 401, a 429) becomes
a JSON-RPC error with the request's id. The request's room connection is
kept in the request table while it is open, so cancelling it (or the end of
stdin) can release it.
"""

from __future__ import annotations

import json
import logging
import socket
import threading
from typing import Any, Iterator

from .. import client, errors
from ..protocol import EVENT_STREAM_TYPE, INTERNAL_ERROR, mirrored_arguments
from ..sse_client import Frame
from .base import BridgeBase
from .messages import as_object, error_message, is_jsonrpc, mcp_headers, request_key, sse_messages

log = logging.getLogger("commonroom.mcp_bridge")


class ForwardingMixin(BridgeBase):
    """POST /mcp for each message read, and its answer on stdout."""

    def _param_headers(self, message: dict[str, Any]) -> dict[str, str] | None:
        """``x-mcp-header`` annotations of the called tool (listed once, lazily)."""
        if message.get("method") != "tools/call":
            return None
        params = as_object(message.get("params"))
        if self._tool_headers is None:
            self._tool_headers = {}
            self._learn_tools(as_object(params.get("_meta")), self._tool_headers)
        name = params.get("name")
        return self._tool_headers.get(name) if isinstance(name, str) else None

    def _learn_tools(self, meta: dict[str, Any], known: dict[str, dict[str, str]]) -> None:
        params: dict[str, Any] = {"_meta": meta}
        listing = {"jsonrpc": "2.0", "id": "ce-mcp-tools", "method": "tools/list", "params": params}
        cursor = None
        for _ in range(50):
            if cursor is not None:
                params["cursor"] = cursor
            try:
                response = client.request(self.transport, "POST", self.path, token=self.token,
                                          raw_body=json.dumps(listing).encode("utf-8"),
                                          headers=mcp_headers(listing), timeout=self.timeout)
                result = (response.json() or {}).get("result") or {}
            except (errors.CommonroomError, ValueError, AttributeError):
                return
            for tool in result.get("tools") or []:
                mirrored = mirrored_arguments(tool.get("inputSchema")) if isinstance(tool, dict) else {}
                if mirrored:
                    known[tool["name"]] = mirrored
            cursor = result.get("nextCursor")
            if not cursor:
                return

    def _note_tools(self, message: dict[str, Any], answer: Any) -> None:
        """Remember ``x-mcp-header`` annotations seen in a ``tools/list`` answer."""
        if message.get("method") != "tools/list" or not isinstance(answer, dict):
            return
        tools = (answer.get("result") or {}).get("tools") if isinstance(answer.get("result"), dict) else None
        if not isinstance(tools, list):
            return
        known = self._tool_headers if self._tool_headers is not None else {}
        for tool in tools:
            if not isinstance(tool, dict) or not isinstance(tool.get("name"), str):
                continue
            known[tool["name"]] = mirrored_arguments(tool.get("inputSchema"))
        self._tool_headers = known

    def forward(self, message: dict[str, Any], body: bytes) -> None:
        """POST one message to ``/mcp`` and write what comes back."""
        request_id = message.get("id")
        is_request = request_id is not None
        try:
            self._forward(message, body, request_id, is_request)
        except Exception as exc:  # never let a thread die silently
            log.exception("forwarding %s failed", message.get("method"))
            if is_request and not self._is_cancelled(request_id):
                self.write(error_message(request_id, INTERNAL_ERROR, f"ce mcp: {exc}"))
        finally:
            with self._state_lock:
                self._inflight.discard(threading.current_thread())

    def _forward(self, message: dict[str, Any], body: bytes, request_id: Any, is_request: bool) -> None:
        method = message.get("method")
        headers = mcp_headers(message, self._param_headers(message))

        def keep(sock: socket.socket) -> None:
            if is_request:
                with self._state_lock:
                    self._sockets[request_key(request_id)] = (method, sock)

        try:
            head, frames = client.stream(self.transport, self.path, method="POST", raw_body=body,
                                         token=self.token, headers=headers, timeout=self.timeout, on_socket=keep)
        except errors.CommonroomError as error:
            if is_request and self._is_cancelled(request_id):
                return  # its connection was released on purpose
            log.warning("%s: %s", method, error)
            if is_request:
                self.write(error_message(request_id, INTERNAL_ERROR, f"{error.code}: {error}",
                                         error.to_dict()), request_id)
            return
        try:
            if head.headers.get("content-type", "").startswith(EVENT_STREAM_TYPE):
                self._forward_stream(message, request_id, frames)
                return
            self._forward_answer(message, request_id, is_request, head)
        finally:
            if is_request:
                with self._state_lock:
                    self._sockets.pop(request_key(request_id), None)

    def _forward_answer(self, message: dict[str, Any], request_id: Any, is_request: bool,
                        head: client.Response) -> None:
        """A JSON (or empty) answer to one message: written to stdout as the room gave it, or as an error."""
        method = message.get("method")
        log.debug("%s → HTTP %s (%d bytes)", method, head.status, len(head.body))
        if head.status == 202 or not head.body.strip():
            if is_request and head.status != 202:
                self.write(error_message(request_id, INTERNAL_ERROR,
                                         f"the room answered HTTP {head.status} with an empty body",
                                         {"status": head.status}), request_id)
            elif is_request:
                log.warning("%s: the room accepted a request without answering it", method)
            return
        try:
            answer = head.json()
        except ValueError:
            answer = None
        if not is_request:
            if head.status >= 400:
                log.warning("notification %s refused: HTTP %s %.300s", method, head.status,
                            head.body.decode("utf-8", "replace"))
            return
        if self._is_cancelled(request_id):
            return
        if is_jsonrpc(answer):
            self._note_tools(message, answer)
            self.write(answer, request_id)
            return
        # Not JSON-RPC: a commonroom error envelope (401, 403, 429, 413) or worse.
        if isinstance(answer, dict) and "error" in answer and "message" in answer:
            text = f"{answer['error']}: {answer['message']}"
            data = {**answer, "status": head.status}
        else:
            text = f"the room answered HTTP {head.status} with a body that is not JSON-RPC"
            data = {"status": head.status, "body": head.body[:2000].decode("utf-8", "replace")}
        self.write(error_message(request_id, INTERNAL_ERROR, text, data), request_id)

    def _forward_stream(self, message: dict[str, Any], request_id: Any, frames: Iterator[Frame]) -> None:
        """An event-stream answer: each message in turn, until the final response."""
        answered = False
        try:
            for item in sse_messages(frames):
                if request_id is not None and self._is_cancelled(request_id):
                    return
                if not is_jsonrpc(item):
                    continue
                if "method" in item and "id" in item:
                    log.warning("dropping a request the room sent on a response stream: %s", item.get("method"))
                    continue
                self.write(item, request_id)
                if "method" not in item and item.get("id") == request_id:
                    answered = True
                    return
        finally:
            close = getattr(frames, "close", None)
            if close:
                close()
            if request_id is not None and not answered and not self._is_cancelled(request_id):
                self.write(error_message(request_id, INTERNAL_ERROR,
                                         "the room closed the response stream before answering"), request_id)
