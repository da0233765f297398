"""A test-only fault: a board completion whose commit's outcome the room cannot confirm.

Loaded into a real room through ``COMMONROOM_MCP_PLUGINS=tests.board_faults:register``
(the registry's plugin hook runs in the room's worker at start), never by the
product. It wraps ``Store.write`` so that the first completion whose answer
holds :data:`MARKER` commits and *then* fails as if the commit could not be
confirmed (``sqlite3.OperationalError``, as a lost disk or I/O error does),
once per answer text: the exact retry of that request must reconcile
(``replayed: true``). ``tests/e2e/test_boards_errors.py`` provokes
``completion_persistence_uncertain`` with it through HTTP, MCP and ``ce``.
"""

from __future__ import annotations

from typing import Any

import peewee as pw

from commonroom.store.db import Store

MARKER = "[fail-after-commit]"
_fired: set[str] = set()


def register(registry: Any) -> None:
    """Install the fault (the registry itself is left as it is)."""
    original = Store.write

    def write(self: Store, fn: Any, *args: Any, **kwargs: Any) -> Any:
        result = original(self, fn, *args, **kwargs)
        answer = result.get("answer") if isinstance(result, dict) else None
        body = answer.get("body") if isinstance(answer, dict) else None
        if isinstance(body, str) and MARKER in body and body not in _fired:
            _fired.add(body)
            raise pw.OperationalError("injected: the commit's outcome could not be confirmed")
        return result

    Store.write = write  # type: ignore[method-assign]
