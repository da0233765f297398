"""A test-only probe: logs each write the room answers from the connection's bytes (commonroom/wirewrites.py).

Loaded into a real room through ``COMMONROOM_MCP_PLUGINS=tests.wire_probe:register``,
never by the product: both paths answer with the same bytes, so this log
line (:data:`LINE`) is how a test tells which one answered, and :data:`DONE`
that no answer's task is left waiting.
"""

from __future__ import annotations

import logging
from typing import Any

from commonroom.wirewrites import WireWrites

LINE = "wire-probe: a plain write answered from the bytes"
#: logged when that answer's task ends (whether it wrote or not)
DONE = "wire-probe: an answer from the bytes ended"

log = logging.getLogger("commonroom.worker")


def register(registry: Any) -> None:
    """Install the probe (the registry itself is left as it is)."""
    original = WireWrites._room_wire_answer

    async def answer(self: WireWrites, answering: Any) -> None:
        log.warning(LINE)
        try:
            await original(self, answering)
        finally:
            log.warning(DONE)

    WireWrites._room_wire_answer = answer  # type: ignore[method-assign]
