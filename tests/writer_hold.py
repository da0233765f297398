"""A test-only hold on the room's writer thread, so that the next writes share one group commit.

Loaded into a real room through ``COMMONROOM_MCP_PLUGINS=tests.writer_hold:register``,
never by the product. A board message whose body holds :data:`MARKER` keeps
the writer thread busy for :data:`HOLD` seconds after its own commit: the
writes that arrive meanwhile queue and then run together in one transaction
(``operations/runner.py``, ``Store.batch``). ``tests/e2e/test_disk_faults.py``
fails that transaction's commit with a full disk.
"""

from __future__ import annotations

import time
from typing import Any

from commonroom.store.db import Store

MARKER = "[hold-the-writer]"
#: Seconds the writer stays busy after the marked write.
HOLD = 2.0


def register(registry: Any) -> None:
    """Install the hold (the registry itself is left as it is)."""
    original = Store.write

    def write(self: Store, fn: Any, *args: Any, **kwargs: Any) -> Any:
        result = original(self, fn, *args, **kwargs)
        body = result.get("body") if isinstance(result, dict) else None  # a posted message's wire form
        if isinstance(body, str) and MARKER in body:
            time.sleep(HOLD)
        return result

    Store.write = write  # type: ignore[method-assign]
