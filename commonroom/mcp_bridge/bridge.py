"""``ce mcp``'s process: stdin read line by line, each message dispatched, and the end of stdin.

A request runs on its own thread (:mod:`.forwarding`), so a slow tool call
does not hold the others back; ``notifications/cancelled`` stops anything
more for its request and releases its room connection. At the end of stdin
the subscriptions in flight are ended, the other requests waited for, and
any left unanswered is answered with an error (:meth:`Bridge.run`).
"""

from __future__ import annotations

import json
import logging
import threading
import time
from typing import IO, Any

from .. import errors
from ..protocol import INTERNAL_ERROR, INVALID_REQUEST, MAX_BODY_BYTES, META_SUBSCRIPTION_ID, PARSE_ERROR, ROOM_ERROR
from .forwarding import ForwardingMixin
from .messages import as_object, error_message, request_key
from .notifications import NotificationsMixin

log = logging.getLogger("commonroom.mcp_bridge")


class Bridge(ForwardingMixin, NotificationsMixin):
    """One ``ce mcp`` process: a session, stdin/stdout and the room's ``/mcp``.

    Built as :class:`.base.BridgeBase` (``transport``, ``token``, ``out``,
    ``timeout``, ``stream_timeout``, ``path``).
    """

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
            params = as_object(message.get("params"))
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
                self._unanswered[request_key(request_id)] = request_id
                self._methods[request_key(request_id)] = method
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
            self._cancelled.add(request_key(request_id))
            self._unanswered.pop(request_key(request_id), None)
        self._release(request_id)
        log.info("request %s cancelled by the client", request_id)
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
                self._cancelled.add(request_key(request_id))
            self._release(request_id)
            self.write(error_message(request_id, INTERNAL_ERROR,
                                     f"ce mcp: stdin closed and the room did not answer within {limit:g} s",
                                     {"waited_seconds": limit}))
            with self._state_lock:
                self._unanswered.pop(request_key(request_id), None)
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
                self._cancelled.add(request_key(request_id))  # nothing more of its stream after the result
            self.write(result)
            self._release(request_id)
            log.info("subscription %s ended: stdin closed", request_id)
