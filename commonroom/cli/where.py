"""Which room a ``ce`` command reads or changes, and as whom: one addressing rule.

Every command that reads or changes the room works with a session: the
``--session-file F`` given, else the default for that room
(:func:`commonroom.cli.sessions.default_session_file`), over the routes the
room already serves, from any machine. The local operator may give the
room's FILE instead where a command reads (``ce proposal list FILE``,
``ce read FILE``): then the sidecar is read on this machine, whether or not
the room runs (:func:`commonroom.cli.common.operator_read`). docs/operator.md,
*One addressing rule*.

This module imports no Typer: :mod:`commonroom.cli.document` (``ce read``
without Typer) reads through it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from . import ids
from .common import operator_read
from .sessions import session_call


def read(file: Path | None, session_file: Path | None, operation: str, values: dict[str, Any] | None = None) -> Any:
    """Run the read-only ``operation`` with the input ``values``: as the local operator on FILE's sidecar
    when ``file`` is given, else with the session (its route in the operation table). ``values`` that are
    None are left out either way. Raises what the operation (or the room) raises."""
    body = {k: v for k, v in (values or {}).items() if v is not None}
    if file is not None:
        return operator_read(file, operation, body)
    return session_call(session_file, operation, body)


def listing(file: Path | None, session_file: Path | None, operation: str) -> Callable[[Any], dict[str, Any]]:
    """``cursor -> page`` of ``operation``'s listing, 200 a page, read as :func:`read` reads."""
    return lambda cursor: read(file, session_file, operation, {"limit": 200, "cursor": cursor})


def pages(file: Path | None, session_file: Path | None, operation: str, items: str, key: str = "id") -> ids.Pages:
    """The ids of ``operation``'s listing page by page (for :func:`commonroom.cli.ids.resolve`)."""
    if file is not None:
        return ids.operator_pages(file, operation, items, key)
    return ids.session_pages(session_file, operation, items, key)


def proposal(file: Path | None, session_file: Path | None, given: str) -> str:
    """A proposal id from an id or a unique start of it, from the listing this caller reads."""
    return ids.resolve(given, pages(file, session_file, "proposals_list", "proposals"), "proposal", "proposal_id")


def handoff(file: Path | None, session_file: Path | None, given: str) -> str:
    """A handoff id from an id or a unique start of it, from the listing this caller reads."""
    return ids.resolve(given, pages(file, session_file, "handoff_list", "handoffs"), "handoff", "handoff_id")


def task(file: Path | None, session_file: Path | None, given: str) -> str:
    """A task id from an id or a unique start of it (the tasks of the handoffs this caller lists)."""
    return ids.resolve(given, pages(file, session_file, "handoff_list", "handoffs", key="task_id"), "task",
                       "task_id", ids.FULL_TASK_ID, fold=False)


def participant(file: Path | None, session_file: Path | None, given: str, parameter: str = "participant") -> str:
    """A participant's name from a name, or an id or a unique start of one as ``ce participants`` prints it."""
    if file is not None:
        return ids.operator_participant(file, given, parameter)
    return ids.participant(session_file, given, parameter)


def names(file: Path | None, session_file: Path | None) -> dict[str, str]:
    """Every participant's name by id (all pages, at most :data:`commonroom.cli.ids.MAX_PAGES`)."""
    found: dict[str, str] = {}
    page_of, cursor = listing(file, session_file, "participants_list"), None
    for _ in range(ids.MAX_PAGES):
        page = page_of(cursor)
        found.update({row["id"]: row["name"] for row in page["participants"]})
        cursor = page.get("next_cursor")
        if not cursor:
            break
    return found


def split(given: list[str | None], least: int) -> tuple[Path | None, list[str | None]]:
    """``(FILE, the rest)`` of a command's positional values ``[FILE] A …``: FILE is there when more than
    ``least`` values were given (the command's own arguments come after it)."""
    present = [value for value in given if value is not None]
    if len(present) > least:
        return Path(str(given[0])), [*given[1:], None]
    return None, given
