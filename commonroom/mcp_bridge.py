"""The stdio side of ``ce mcp``: newline-delimited JSON-RPC ⇄ the room's ``/mcp``.

A desktop MCP client starts ``ce mcp`` and speaks JSON-RPC on its stdin and
stdout, one message per line. The bridge holds no protocol logic of its own:

- each message read from stdin is POSTed as is to the room's ``POST /mcp``
  with the stored session's bearer, through the byte client
  (:mod:`commonroom.client`: HTTP/1.1, ``Host: commonroom``,
  ``Connection: close``, body read until ``Content-Length``), with the
  standard headers derived from the message (:func:`mcp_headers`);
- the answer goes to stdout: a JSON body as one line, an event-stream body
  event by event; a 202 (the answer to a notification) writes nothing;
- a request the room cannot be asked (transport error) or that it answers
  with something that is not JSON-RPC (a 401, a 429) is answered on stdout
  with a JSON-RPC error carrying that request's id;
- a ``GET /mcp`` event stream stays open beside the requests (reconnecting
  when it drops) and its notifications go to stdout too.

Stdout carries protocol messages only; everything else goes to stderr through
:mod:`logging`. Requests run concurrently (one thread each), so a slow tool
call does not hold the others back; answers may come out of order, as
JSON-RPC allows. ``notifications/cancelled`` is a stdio-only message: the
bridge does not forward it but stops forwarding anything for that request.
"""

from __future__ import annotations

import json
import logging
import socket
import threading
import time
from dataclasses import dataclass, field
from typing import IO, Any, Callable, Iterable, Iterator

from . import client, errors
from .protocol import (
    CLIENT_NAME_PARAMS,
    EVENT_STREAM_TYPE,
    INTERNAL_ERROR,
    INVALID_REQUEST,
    JSON_TYPE,
    MAX_BODY_BYTES,
    MCP_POST_ACCEPT,
    MCP_VERSION,
    META_SUBSCRIPTION_ID,
    META_VERSION,
    METHOD_HEADER,
    NAME_HEADER,
    PARSE_ERROR,
    ROOM_ERROR,
    VERSION_HEADER,
    encode_header_value,
    mirrored_arguments,
    param_header,
)
from .sse_client import Frame

log = logging.getLogger("commonroom.mcp_bridge")


def _scalar_text(value: Any) -> str | None:
    """A tool argument as its ``Mcp-Param-*`` text (None: not mirrored)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, str)):
        return str(value)
    return None


def _object(value: Any) -> dict[str, Any]:
    """``value`` when it is a JSON object, else an empty one."""
    return value if isinstance(value, dict) else {}


def mcp_headers(message: dict[str, Any], param_headers: dict[str, str] | None = None) -> dict[str, str]:
    """The standard MCP headers for one outgoing message.

    ``MCP-Protocol-Version`` comes from ``params._meta`` (the revision we
    speak when the message has none, so that the room reports the missing
    ``_meta`` field itself); ``Mcp-Method`` is the method; ``Mcp-Name``
    mirrors the field the method names
    (:data:`commonroom.protocol.CLIENT_NAME_PARAMS`); ``param_headers``
    (argument → header name, from the tool's ``x-mcp-header`` annotations)
    adds ``Mcp-Param-*``. Values are encoded with
    :func:`commonroom.protocol.encode_header_value`.
    """
    params = _object(message.get("params"))
    meta = _object(params.get("_meta"))
    version = meta.get(META_VERSION)
    headers = {
        "Content-Type": JSON_TYPE,
        "Accept": MCP_POST_ACCEPT,
        VERSION_HEADER: encode_header_value(version if isinstance(version, str) else MCP_VERSION),
    }
    method = message.get("method")
    if isinstance(method, str):
        headers[METHOD_HEADER] = encode_header_value(method)
        field_name = CLIENT_NAME_PARAMS.get(method)
        if field_name and isinstance(params.get(field_name), str):
            headers[NAME_HEADER] = encode_header_value(params[field_name])
    if param_headers and method == "tools/call":
        arguments = _object(params.get("arguments"))
        for argument, name in param_headers.items():
            text = _scalar_text(arguments.get(argument))
            if text is not None:
                headers[param_header(name)] = encode_header_value(text)
    return headers


def error_message(request_id: Any, code: int, message: str, data: Any = None) -> dict[str, Any]:
    """A JSON-RPC error response (``id`` omitted when there is none)."""
    out: dict[str, Any] = {"jsonrpc": "2.0"}
    if request_id is not None:
        out["id"] = request_id
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    out["error"] = error
    return out


def sse_messages(frames: Iterable[Frame], on_retry: Callable[[int], None] | None = None) -> Iterator[Any]:
    """The JSON payloads of a server-sent event stream's frames, one per event.

    ``frames`` come from :func:`commonroom.client.stream` (or
    :func:`commonroom.sse_client.iter_frames`). Blocks without data
    (heartbeats) and events whose data is not JSON are skipped; a ``retry``
    hint is passed to ``on_retry``.
    """
    for frame in frames:
        if frame.retry is not None and on_retry is not None:
            on_retry(frame.retry)
        if not frame.is_event:
            continue
        try:
            yield frame.json()
        except ValueError:
            log.warning("skipping an event that is not JSON: %.200s", frame.data)


def _is_jsonrpc(value: Any) -> bool:
    return isinstance(value, dict) and value.get("jsonrpc") == "2.0" and ("result" in value or "error" in value
                                                                          or "method" in value)


@dataclass
class Bridge:
    """One ``ce mcp`` process: a session, stdin/stdout and the room's ``/mcp``."""

    transport: dict[str, Any]
    token: str
    out: IO[bytes]
    timeout: float = 300.0
    stream_timeout: float = 90.0
    path: str = "/mcp"
    _write_lock: threading.Lock = field(default_factory=threading.Lock)
    _cancelled: set = field(default_factory=set)
    _inflight: set = field(default_factory=set)
    #: Requests read and not yet answered (nor cancelled): id key -> the request's id.
    _unanswered: dict = field(default_factory=dict)
    #: The room connection of each request in flight: id key -> (method, socket).
    _sockets: dict = field(default_factory=dict)
    #: The method of each request read: id key -> method.
    _methods: dict = field(default_factory=dict)
    _state_lock: threading.Lock = field(default_factory=threading.Lock)
    _stop: threading.Event = field(default_factory=threading.Event)
    _tool_headers: dict[str, dict[str, str]] | None = None
    stream_connected: threading.Event = field(default_factory=threading.Event)

    # -- output -------------------------------------------------------------

    def write(self, message: Any, request_id: Any = None) -> None:
        """One protocol message on stdout, as one line.

        With ``request_id`` the message belongs to that request's exchange
        and is written only while the request is not cancelled or ended
        (checked under the write lock, so nothing follows its end). A
        response marks its request answered (:meth:`unanswered`).
        """
        data = json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n"
        with self._write_lock:
            if self._stop.is_set() and self.out.closed:
                return
            if request_id is not None and self._is_cancelled(request_id):
                return
            if isinstance(message, dict) and "method" not in message and "id" in message:
                with self._state_lock:
                    self._unanswered.pop(_key(message["id"]), None)
            try:
                self.out.write(data)
                self.out.flush()
            except (BrokenPipeError, ValueError, OSError) as exc:  # the client went away
                log.warning("stdout closed (%s); stopping", exc)
                self._stop.set()

    # -- stdin --------------------------------------------------------------

    def handle_line(self, raw: bytes) -> threading.Thread | None:
        """Parse one stdin line and dispatch it (requests on their own thread)."""
        line = raw.strip()
        if not line:
            return None
        try:
            message = json.loads(line)
        except ValueError as exc:
            log.warning("stdin: a line that is not JSON: %s", exc)
            self.write(error_message(None, PARSE_ERROR, "Parse error", {"reason": str(exc)}))
            return None
        if not isinstance(message, dict):
            self.write(error_message(None, INVALID_REQUEST, "Invalid Request",
                                     {"reason": "one JSON-RPC message object per line (no batches)"}))
            return None
        method = message.get("method")
        request_id = message.get("id")
        if not isinstance(method, str):
            log.info("stdin: dropping a message without a method (the room sends no requests): %.200s", line)
            return None
        if method == "notifications/cancelled":
            params = _object(message.get("params"))
            self.cancel(params.get("requestId"))
            # and to the room, which ends the stream answering that request (subscriptions/listen)
            thread = threading.Thread(target=self.forward, args=(message, line), daemon=True,
                                      name="mcp-notifications/cancelled")
            with self._state_lock:
                self._inflight.add(thread)
            thread.start()
            return thread
        if len(line) > MAX_BODY_BYTES:
            # the room refuses it (413) before reading it: say so here, with the id
            if request_id is not None:
                refusal = errors.body_too_large(MAX_BODY_BYTES)
                self.write(error_message(request_id, ROOM_ERROR, refusal.message, refusal.to_dict()))
            return None
        thread = threading.Thread(target=self.forward, args=(message, line), daemon=True,
                                  name=f"mcp-{method}-{request_id}")
        with self._state_lock:
            self._inflight.add(thread)
            if request_id is not None:
                self._unanswered[_key(request_id)] = request_id
                self._methods[_key(request_id)] = method
        thread.start()
        return thread

    def cancel(self, request_id: Any) -> None:
        """Stop forwarding anything for ``request_id`` (stdio cancellation) and release its room connection.

        The request's socket is shut down, so a long-poll (a board
        observation's bounded wait, a ``subscriptions/listen``) holds no
        connection to the room once cancelled.
        """
        if request_id is None:
            return
        with self._state_lock:
            self._cancelled.add(_key(request_id))
            self._unanswered.pop(_key(request_id), None)
        self._release(request_id)
        log.info("request %s cancelled by the client", request_id)

    def _is_cancelled(self, request_id: Any) -> bool:
        with self._state_lock:
            return _key(request_id) in self._cancelled

    def _release(self, request_id: Any) -> None:
        """Shut down the room connection of ``request_id``'s exchange, if it has one open."""
        with self._state_lock:
            entry = self._sockets.pop(_key(request_id), None)
        if entry is not None:
            try:
                entry[1].shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def unanswered(self) -> list[Any]:
        """The ids of the requests read from stdin that have had no response yet (nor were cancelled)."""
        with self._state_lock:
            return list(self._unanswered.values())

    # -- forwarding ---------------------------------------------------------

    def _param_headers(self, message: dict[str, Any]) -> dict[str, str] | None:
        """``x-mcp-header`` annotations of the called tool (listed once, lazily)."""
        if message.get("method") != "tools/call":
            return None
        params = _object(message.get("params"))
        if self._tool_headers is None:
            self._tool_headers = {}
            self._learn_tools(_object(params.get("_meta")), self._tool_headers)
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
                    self._sockets[_key(request_id)] = (method, sock)

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
                    self._sockets.pop(_key(request_id), None)

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
        if _is_jsonrpc(answer):
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
                if not _is_jsonrpc(item):
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

    # -- GET /mcp -----------------------------------------------------------

    def listen(self) -> None:
        """Keep ``GET /mcp`` open and copy its notifications to stdout (reconnecting)."""
        delay = 1.0
        retry_ms: list[int] = []
        while not self._stop.is_set():
            started = time.monotonic()
            try:
                head, frames = client.stream(
                    self.transport, self.path, token=self.token, timeout=self.stream_timeout,
                    headers={"Accept": EVENT_STREAM_TYPE, VERSION_HEADER: MCP_VERSION},
                )
            except errors.CommonroomError as error:
                log.warning("GET %s: %s; retrying in %.0fs", self.path, error, delay)
                self._stop.wait(delay)
                delay = min(delay * 2, 30.0)
                continue
            if head.status != 200:
                text = head.body[:500].decode("utf-8", "replace")
                if 400 <= head.status < 500 and head.status not in (408, 429):
                    log.error("GET %s answered HTTP %s; no notification stream: %s", self.path, head.status, text)
                    return
                log.warning("GET %s answered HTTP %s; retrying in %.0fs", self.path, head.status, delay)
                self._stop.wait(delay)
                delay = min(delay * 2, 30.0)
                continue
            log.info("notification stream open")
            self.stream_connected.set()
            try:
                for item in sse_messages(frames, on_retry=retry_ms.append):
                    if self._stop.is_set():
                        break
                    if isinstance(item, dict) and "method" in item and "id" not in item:
                        self.write(item)
            finally:
                self.stream_connected.clear()
                close = getattr(frames, "close", None)
                if close:
                    close()
            if self._stop.is_set():
                return
            if time.monotonic() - started > 30:
                delay = 1.0
            wait = retry_ms[-1] / 1000 if retry_ms else delay
            log.info("notification stream closed; reconnecting in %.1fs", wait)
            self._stop.wait(wait)
            delay = min(delay * 2, 30.0)

    # -- lifecycle ----------------------------------------------------------

    def run(self, stdin: IO[bytes], *, notifications: bool = True, drain: float | None = None) -> int:
        """Serve until stdin ends; then answer every request read: 0 when the room answered each, else 1.

        At the end of stdin each ``subscriptions/listen`` in flight is ended
        as a server ends a subscription on purpose: its JSON-RPC result
        (``resultType: complete``, ``_meta`` naming the subscription) and
        its room connection closed. The other requests in flight are waited
        for, up to ``drain`` seconds (default: :attr:`timeout`, the wait for
        one answer); one still unanswered then is answered with a JSON-RPC
        error naming the wait, its connection closed, and the exit status is 1.
        """
        listener = None
        if notifications:
            listener = threading.Thread(target=self.listen, daemon=True, name="mcp-listen")
            listener.start()
        for raw in iter(stdin.readline, b""):
            self.handle_line(raw)
        log.info("stdin closed; finishing requests in flight")
        self._end_listens()
        limit = self.timeout if drain is None else drain
        deadline = time.monotonic() + limit
        while True:
            with self._state_lock:
                pending = list(self._inflight)
            if not pending or time.monotonic() > deadline:
                break
            pending[0].join(max(0.0, deadline - time.monotonic()))
        left = self.unanswered()
        for request_id in left:
            with self._state_lock:
                self._cancelled.add(_key(request_id))
            self._release(request_id)
            self.write(error_message(request_id, INTERNAL_ERROR,
                                     f"ce mcp: stdin closed and the room did not answer within {limit:g} s",
                                     {"waited_seconds": limit}))
            with self._state_lock:
                self._unanswered.pop(_key(request_id), None)
        self._stop.set()
        return 1 if left else 0

    def _end_listens(self) -> None:
        """End every ``subscriptions/listen`` in flight: its closing result written, its connection released."""
        with self._state_lock:
            listens = [request_id for key, request_id in self._unanswered.items()
                       if self._methods.get(key) == "subscriptions/listen"]
        for request_id in listens:
            result = {"jsonrpc": "2.0", "id": request_id,
                      "result": {"resultType": "complete", "_meta": {META_SUBSCRIPTION_ID: request_id}}}
            with self._write_lock, self._state_lock:
                self._cancelled.add(_key(request_id))  # nothing more of its stream after the result
            self.write(result)
            self._release(request_id)
            log.info("subscription %s ended: stdin closed", request_id)


def _key(request_id: Any) -> str:
    """A JSON-RPC id as a dictionary key (``1`` and ``"1"`` are different ids)."""
    return json.dumps(request_id)
