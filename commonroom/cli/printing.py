"""The pieces ``ce`` prints with: a Rich console on stdout, tables, detail views, short ids, relative times.

Shared by :mod:`commonroom.cli.render` (which picks an answer's renderer)
and the renderers themselves (:mod:`commonroom.cli.render_shapes`,
:mod:`commonroom.cli.board_summary`), which register with :func:`renders`.
Rich is imported by what prints (``ce --help`` stays light:
tests/e2e/test_ce_startup.py). Colour and terminal rendering only when
stdout is a terminal; with ``NO_COLOR`` set and on piped output there is no
escape sequence at all, and tables carry no trailing spaces.
"""

from __future__ import annotations

import json
import os
import re
import sys
from contextvars import ContextVar
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, Callable, Iterable

if TYPE_CHECKING:
    from rich.console import Console
    from rich.text import Text

#: True while the running command was given ``--json``.
JSON_OUTPUT: ContextVar[bool] = ContextVar("ce_json_output", default=False)

Renderer = Callable[[Any], None]
#: The readable renderer of each answer shape (:func:`renders`).
RENDERERS: dict[str, Renderer] = {}

#: Columns a table gets when stdout is not a terminal (nothing is cut).
PIPE_WIDTH = 200


def renders(shape: str) -> Callable[[Renderer], Renderer]:
    """Decorator: register the readable renderer of answers of ``shape``."""

    def register(fn: Renderer) -> Renderer:
        RENDERERS[shape] = fn
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


def line(text: str | Text) -> None:
    """Print one line for people on stdout."""
    console().print(text, overflow="ignore", crop=False, soft_wrap=True)


def outcome(text: str) -> None:
    """Print the one line saying what a command did, naming the room it acted on first (``sample.md: v2
    committed by …``) when the command knows it (:data:`commonroom.cli.sessions.ROOM`)."""
    from .sessions import ROOM

    room = ROOM.get()
    line(f"{room}: {text}" if room else text)


# -- small pieces the renderers share ---------------------------------------------


def short(identifier: Any, keep: int = 8) -> str:
    """``pr_85ee0f…``: the prefix and the first ``keep`` characters of an id."""
    text = str(identifier or "-")
    prefix, sep, rest = text.partition("_")
    if not sep:
        prefix, rest = "", text
    return text if len(rest) <= keep else f"{prefix}{sep}{rest[:keep]}…"


def _moment(timestamp: Any) -> datetime | str:
    """An RFC 3339 timestamp as an aware datetime (UTC when it names no zone); ``-`` for none, the text itself
    when it is not a timestamp."""
    if not timestamp:
        return "-"
    try:
        moment = datetime.fromisoformat(str(timestamp).replace("Z", "+00:00"))
    except ValueError:
        return str(timestamp)
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=timezone.utc)


def when(timestamp: Any, now: datetime | None = None) -> str:
    """A timestamp relative to now: ``just now``, ``5m ago``, ``in 2h``, ``3d ago``.

    The count is rounded to the nearest of the largest unit it reaches
    (``29d 23h 59m`` ahead is ``in 30d``; ``59m 40s`` ago is ``1h ago``).
    """
    moment = _moment(timestamp)
    if not isinstance(moment, datetime):
        return moment
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


def clock(timestamp: Any, now: datetime | None = None) -> str:
    """A moment as people say it: ``10:18 (in 26m)``, local time; ``Dec 8 10:18 (in 1d)`` on another day.

    The time of day in this machine's time zone, then :func:`when` in
    parentheses; ``-`` for none, the text itself when it is not a timestamp.
    """
    moment = _moment(timestamp)
    if not isinstance(moment, datetime):
        return moment
    local = moment.astimezone()
    today = (now or datetime.now(timezone.utc)).astimezone().date()
    day = "" if local.date() == today else f"{local:%b} {local.day} "
    return f"{day}{local:%H:%M} ({when(timestamp, now)})"


def span(lines: Any) -> str:
    """``lines 6–10`` for a ``[6, 10]`` line span, ``before line 6`` for the insertion point
    ``[6, 5]`` (a lease whose lines were all deleted), ``""`` for none."""
    if isinstance(lines, list) and len(lines) == 2:
        if isinstance(lines[0], int) and isinstance(lines[1], int) and lines[1] < lines[0]:
            return f"before line {lines[0]}"
        return f"line {lines[0]}" if lines[0] == lines[1] else f"lines {lines[0]}–{lines[1]}"
    return ""


def place(region: Any, lines: Any) -> str:
    """Where a region is: ``"Goals" (lines 6–10)``, ``lines 6–10``, ``the whole document (lines 1–22)`` or
    ``the whole document``."""
    heading = region.get("heading") if isinstance(region, dict) else None
    where = span(lines)
    if heading:
        title = " › ".join(str(h) for h in heading)
        return f'"{title}"' + (f" ({where})" if where else "")
    if isinstance(region, dict) and region.get("document") and where:
        return f"the whole document ({where})"
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
    """The document: its own lines lightly highlighted on a terminal, its exact bytes otherwise.

    On a terminal every character is kept (:func:`commonroom.cli.highlight.highlight`:
    heading lines keep their ``#``, nothing is padded or dropped); with
    ``NO_COLOR`` set the lines carry no escape sequence. Whether stdout is a
    terminal is asked of stdout itself, not of Rich (``FORCE_COLOR`` makes
    Rich treat a pipe as a terminal), so ``ce read > copy.md`` is a
    byte-for-byte copy whatever the environment.
    """
    sys.stdout.flush()
    if sys.stdout.isatty() and not JSON_OUTPUT.get():
        from .highlight import highlight

        encoding = getattr(sys.stdout, "encoding", None) or "utf-8"
        data = highlight(text, colour=not plain()).encode(encoding, errors="replace")
    else:
        data = text.encode("utf-8")
    sys.stdout.buffer.write(data)
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


def name_of(who: Any) -> str:
    """A participant as people read it: its name, else its id (``{"id", "name"}`` or a plain value), ``-`` for none."""
    if isinstance(who, dict):
        return str(who.get("name") or who.get("id") or "-")
    return str(who or "-")
