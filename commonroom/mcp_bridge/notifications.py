"""``ce mcp``'s notification stream: ``GET /mcp`` kept open beside the requests.

The room's notifications (resource updates, list changes) are copied to
stdout as they come; the stream is opened again when it drops, after the
server's ``retry`` hint or a doubling delay (1 s to 30 s). A client error
other than 408 and 429 ends it for good: the bridge goes on without
notifications.
"""

from __future__ import annotations

import logging
import time

from .. import client, errors
from ..protocol import EVENT_STREAM_TYPE, MCP_VERSION, VERSION_HEADER
from .base import BridgeBase
from .messages import sse_messages

log = logging.getLogger("commonroom.mcp_bridge")


class NotificationsMixin(BridgeBase):
    """``GET /mcp``: the room's notifications on stdout (reconnecting)."""

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
