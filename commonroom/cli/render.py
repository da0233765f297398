"""How ``ce`` prints an answer: for people by default, the schema'd JSON with ``--json``.

Every command that prints data hands its answer to :func:`show` with the
answer's shape (the schema reference of the operation's output, such as
``editing#VersionsPage``). With ``--json`` the answer is printed as it
came, indented JSON, unchanged; otherwise the shape's renderer (registered
with :func:`renders`, see :mod:`commonroom.cli.render_shapes`) prints it
with Rich: tables for pages, one line for an outcome, the markdown itself
for a document. Shapes without a renderer print as a two-column table.

Colour and terminal rendering only when stdout is a terminal (Rich's
:class:`~rich.console.Console` detects it); with ``NO_COLOR`` set and on
piped output there is no escape sequence at all, and tables carry no
trailing spaces. Errors are one line on stderr (code,
message, what to do next); with ``--json`` the error envelope, as before.
"""

from __future__ import annotations

import json
import os
import re
import sys
from contextvars import ContextVar
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, Callable, Iterable


if TYPE_CHECKING:  # Rich is imported by what prints (``ce --help`` stays light: tests/e2e/test_ce_startup.py)
    from rich.console import Console
    from rich.text import Text

from ..errors import CommonroomError

#: True while the running command was given ``--json``.
JSON_OUTPUT: ContextVar[bool] = ContextVar("ce_json_output", default=False)

#: Where the answer holds the id of what the command made (``handoff.id``), while ``--id-only`` is given.
MADE: ContextVar[str | None] = ContextVar("ce_made", default=None)

Renderer = Callable[[Any], None]
_RENDERERS: dict[str, Renderer] = {}

#: Columns a table gets when stdout is not a terminal (nothing is cut).
PIPE_WIDTH = 200


def renders(shape: str) -> Callable[[Renderer], Renderer]:
    """Decorator: register the readable renderer of answers of ``shape``."""

    def register(fn: Renderer) -> Renderer:
        _RENDERERS[shape] = fn
        return fn

    return register


def plain() -> bool:
    """True when ``NO_COLOR`` is set (and not empty): no escape sequence at all, not even bold (no-color.org)."""
    return bool(os.environ.get("NO_COLOR"))


def console(stderr: bool = False) -> Console:
    """A Rich console on the current stdout (or stderr); wide and plain when it is not a terminal.

    With ``NO_COLOR`` it has no colour system, so it writes no escape
    sequence at all (Rich's own ``NO_COLOR`` support drops colours but keeps
    bold, dim and underline).
    """
    from rich.console import Console

    file = sys.stderr if stderr else sys.stdout
    bare: dict[str, Any] = {"color_system": None} if plain() else {}
    out = Console(file=file, highlight=False, soft_wrap=False, **bare)
    if not out.is_terminal:
        out = Console(file=file, highlight=False, soft_wrap=False, width=PIPE_WIDTH, no_color=True, color_system=None)
    return out


#: Spaces at the end of a line, before any style resets that follow them.
_TRAILING = re.compile(r" +((?:\x1b\[[0-9;]*m)*)$", re.MULTILINE)


def print_grid(grid: Any, width: int | None = None) -> None:
    """Print a Rich table on stdout (at most ``width`` columns) without the spaces Rich pads its last column with."""
    out = console()
    if width is not None:
        out.width = min(out.width, width)
    with out.capture() as captured:
        out.print(grid)
    sys.stdout.write(_TRAILING.sub(r"\1", captured.get()))
    sys.stdout.flush()


def emit_json(value: Any) -> None:
    """Print ``value`` as indented JSON on stdout (the ``--json`` form of every answer)."""
    sys.stdout.write(json.dumps(value, indent=2, ensure_ascii=False) + "\n")
    sys.stdout.flush()


def show(answer: Any, shape: str) -> None:
    """Print ``answer`` (of schema ``shape``): the new id alone with ``--id-only`` (:data:`MADE`), JSON with
    ``--json``, else its readable form."""
    made = MADE.get()
    if made is not None:
        value: Any = answer
        for part in made.split("."):
            value = value[part]
        sys.stdout.write(f"{value}\n")
        sys.stdout.flush()
        return
    if JSON_OUTPUT.get():
        emit_json(answer)
        return
    from . import render_shapes  # noqa: F401  (registers the renderers)

    _RENDERERS.get(shape, fields)(answer)


def line(text: str | Text) -> None:
    """Print one line for people on stdout."""
    console().print(text, overflow="ignore", crop=False, soft_wrap=True)


# -- small pieces the renderers share ---------------------------------------------


def short(identifier: Any, keep: int = 8) -> str:
    """``pr_85ee0f…``: the prefix and the first ``keep`` characters of an id."""
    text = str(identifier or "-")
    prefix, sep, rest = text.partition("_")
    if not sep:
        prefix, rest = "", text
    return text if len(rest) <= keep else f"{prefix}{sep}{rest[:keep]}…"


def when(timestamp: Any, now: datetime | None = None) -> str:
    """A timestamp relative to now: ``just now``, ``5m ago``, ``in 2h``, ``3d ago``.

    The count is rounded to the nearest of the largest unit it reaches
    (``29d 23h 59m`` ahead is ``in 30d``; ``59m 40s`` ago is ``1h ago``).
    """
    if not timestamp:
        return "-"
    try:
        moment = datetime.fromisoformat(str(timestamp).replace("Z", "+00:00"))
    except ValueError:
        return str(timestamp)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    seconds = int(((now or datetime.now(timezone.utc)) - moment).total_seconds())
    if abs(seconds) < 5:
        return "just now"
    amount = abs(seconds)
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60), ("s", 1)):
        rounded = (amount + size // 2) // size  # to the nearest: a 30-day session expires "in 30d", not 29d
        if rounded >= 1:
            count = f"{rounded}{unit}"
            break
    return f"{count} ago" if seconds > 0 else f"in {count}"


def span(lines: Any) -> str:
    """``lines 6–10`` for a ``[6, 10]`` line span, ``""`` for none."""
    if isinstance(lines, list) and len(lines) == 2:
        return f"line {lines[0]}" if lines[0] == lines[1] else f"lines {lines[0]}–{lines[1]}"
    return ""


def place(region: Any, lines: Any) -> str:
    """Where a region is: ``"Goals" (lines 6–10)``, ``lines 6–10`` or ``the whole document``."""
    heading = region.get("heading") if isinstance(region, dict) else None
    where = span(lines)
    if heading:
        title = " › ".join(str(h) for h in heading)
        return f'"{title}"' + (f" ({where})" if where else "")
    return where or "the whole document"


#: Columns of a table whose text wraps (the others keep one line) when the table is wider than the terminal.
WRAPPED = frozenset({"summary", "capabilities"})


def table(rows: Iterable[dict[str, Any]], columns: list[tuple[str, Callable[[dict[str, Any]], Any]]],
          empty: str, next_cursor: Any = None, width: int | None = None) -> None:
    """A Rich table of ``rows`` (``columns``: header, cell of a row; at most ``width`` columns wide, the
    :data:`WRAPPED` ones wrapping), then the next-page hint."""
    from rich.table import Table
    from rich.text import Text

    rows = list(rows)
    if not rows:
        line(Text(empty, style="dim"))
    else:
        grid = Table(box=None, header_style="bold", pad_edge=False)
        for header, _ in columns:
            grid.add_column(header, no_wrap=header not in WRAPPED, overflow="fold")
        for row in rows:
            grid.add_row(*(Text(str(cell(row) if cell(row) is not None else "-")) for _, cell in columns))
        print_grid(grid, width)
    more(next_cursor)


def more(next_cursor: Any) -> None:
    """The hint for the next page of a paged answer, if there is one."""
    from rich.text import Text

    if next_cursor:
        line(Text(f"more: run again with --cursor {next_cursor}", style="dim"))


def fields(answer: Any) -> None:
    """Any answer as a two-column table of its fields (nested values as compact JSON)."""
    from rich.table import Table
    from rich.text import Text

    if not isinstance(answer, dict):
        line(Text(json.dumps(answer, ensure_ascii=False)))
        return
    grid = Table(box=None, show_header=False, pad_edge=False)
    grid.add_column(style="bold", no_wrap=True)
    grid.add_column(overflow="fold")
    for key, value in answer.items():
        shown = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        grid.add_row(key, Text(shown))
    print_grid(grid)


#: Columns a detail view (:func:`detail`) takes at most, on a terminal or piped.
DETAIL_WIDTH = 100


def detail(title: str | Text, rows: Iterable[tuple[str, Any]]) -> None:
    """A record for people: its title line, then ``label  value`` rows (values wrapped, multi-line text kept),
    at most :data:`DETAIL_WIDTH` columns; rows whose value is None or empty are left out."""
    from rich.table import Table
    from rich.text import Text

    line(title)
    grid = Table(box=None, show_header=False, pad_edge=False)
    grid.add_column(style="bold", no_wrap=True)
    grid.add_column(overflow="fold")
    for label, value in rows:
        if value is None or value == "" or value == []:
            continue
        grid.add_row(label, value if isinstance(value, Text) else Text(str(value)))
    print_grid(grid, DETAIL_WIDTH)


def markdown(text: str) -> None:
    """The document: rendered Markdown on a terminal, its exact bytes otherwise.

    Whether stdout is a terminal is asked of stdout itself, not of Rich
    (``FORCE_COLOR`` makes Rich treat a pipe as a terminal), so
    ``ce read > copy.md`` is a byte-for-byte copy whatever the environment.
    """
    if sys.stdout.isatty() and not JSON_OUTPUT.get():
        from rich.markdown import Markdown

        console().print(Markdown(text))
        return
    sys.stdout.flush()
    sys.stdout.buffer.write(text.encode("utf-8"))
    sys.stdout.buffer.flush()


def diff(text: str, stderr: bool = False) -> None:
    """A unified diff: coloured on a terminal, the text as it is otherwise."""
    out = console(stderr)
    if out.is_terminal:
        from rich.syntax import Syntax

        out.print(Syntax(text.rstrip("\n"), "diff", theme="ansi_dark", background_color="default"))
        return
    stream = sys.stderr if stderr else sys.stdout
    stream.write(text)
    stream.flush()


# -- errors ----------------------------------------------------------------------

#: What to do next, by error code (the message says what happened): the one step that can work, or ``None``
#: where the message itself says what to fix (a bad argument) or no step of the caller's can help.
#: Every code of :data:`commonroom.errors.STATUS` has an entry (tests/unit/test_cli_hints.py).
NEXT: dict[str, str | None] = {
    "unauthorized": "join again with a fresh invitation (ce join TOKEN --session-file FILE)",
    "session_expired": "ask the room's operator for a new invitation, then ce join it",
    "permission_denied": None,  # worded from details.required (:func:`next_step`); else no capability helps
    "invitation_expired": "ask the room's operator for a new invitation",
    "invitation_revoked": "ask the room's operator for a new invitation",
    "invitation_redeemed": "an invitation admits once: ask the room's operator for a new one",
    "unsupported_version": "install the commonroom version the room runs (ce --version prints yours)",
    "stale_version": None,  # worded from current_version (:func:`next_step`)
    "lease_conflict": "wait until that lease is released or expires (ce leases FILE), then retry",
    "proposal_not_found": "list the proposals with ce proposals FILE",
    "proposal_conflict": "the proposal was already decided: see ce proposals FILE",
    "invalid_region": "check --heading / --lines against the document (ce read); a heading path is one "
                      "--heading per title, outermost first (--heading 'Release plan' --heading Goals)",
    "version_not_found": "list the versions with ce versions FILE",
    "transport_unavailable": "check that the room is running (ce status FILE) and retry",
    "limit_exceeded": None,  # worded from retry_after_seconds (:func:`next_step`); a body too large: shorten it
    "invalid_request": None,  # the message names the argument or the state at fault
    "not_found": "check the id (the list commands print them)",
    "method_not_allowed": None,  # only ce call reaches it: the message names the methods the route serves
    "handoff_not_found": "list the handoffs with ce handoffs FILE",
    "handoff_conflict": None,  # the message names the handoff's status and what the transition needs
    "idempotency_mismatch": "give a new --idempotency-key for a different request",
    "message_not_found": "list the board's messages with ce board list BOARD",
    "peer_not_found": "list your peers with ce board peers",
    "assignment_stale": "read the todo again (ce board assignment BOARD MESSAGE) and complete it with its new fence",
    "assignment_history_lost": "read the todo again (ce board assignment BOARD MESSAGE) and complete it with "
                               "its new fence",
    "assignment_too_large": None,  # the todo and its replies exceed what one answer carries: nothing to retry
    "completion_mismatch": "give a new --key for a different answer",
    "completion_persistence_uncertain": "run the exact same command again",
    "storage_unavailable": "the room's operator frees disk space or restores the files beside the document; "
                           "then retry",
}


def next_step(envelope: dict[str, Any]) -> str:
    """The ``next:`` hint of an error envelope: :data:`NEXT`, or worded from its recovery fields; ``""`` for none."""
    code = envelope.get("error", "")
    if code == "stale_version":
        head = envelope.get("current_version")
        option = "--expected" if "expected_version" in envelope else "--base"
        return f"the head is now v{head}: rebase your text on it and rerun with {option} {head}"
    if code == "limit_exceeded":
        seconds = envelope.get("retry_after_seconds")
        return f"retry after {seconds} s" if seconds is not None else ""
    if code == "permission_denied":
        from ..vocabulary import CAPABILITIES

        required = (envelope.get("details") or {}).get("required")  # also "assignee": then no capability helps
        return (f"ask the room's operator for an invitation with the {required!r} capability"
                if required in CAPABILITIES else "")
    return NEXT.get(code) or ""


def error(err: CommonroomError) -> None:
    """Print ``err`` on stderr: the envelope with ``--json``, else the diff (if any) and one line."""
    envelope = err.to_dict()
    if JSON_OUTPUT.get():
        sys.stderr.write(json.dumps(envelope, indent=2, ensure_ascii=False) + "\n")
        return
    if envelope.get("error") == "stale_version" and envelope.get("diff"):
        diff(envelope["diff"], stderr=True)
    message = " ".join(str(envelope.get("message", "")).split())
    step = next_step(envelope)
    from rich.text import Text

    text = Text(f"ce: {envelope.get('error')}: ", style="bold red")
    text.append(message + (f" — next: {step}" if step else ""))
    console(stderr=True).print(text, overflow="ignore", crop=False, soft_wrap=True)
