"""Render ``ce --help`` into ``commonroom/cli/help.txt``, which ``ce --help`` prints without importing Typer.

``python -m codegen`` writes it after ``generated/``; ``python -m codegen
--check`` fails when it differs from the application.
The text is what the real Typer application (:data:`commonroom.cli.main.app`,
every command built) writes to stdout for ``ce --help`` on a terminal of
:data:`commonroom.cli.entry.COLUMNS` columns: click's help formatter is
``max(min(columns, 80) - 2, 50)`` characters wide, 78 here, and ``echo``
ends it with a newline. :mod:`commonroom.cli.entry` prints it byte for byte.
"""

from __future__ import annotations

import io
from contextlib import redirect_stdout
from pathlib import Path

from commonroom.cli.entry import COLUMNS, HELP_TEXT, PROG

ROOT = Path(__file__).resolve().parents[1]
HELP_FILE = ROOT / "commonroom" / "cli" / HELP_TEXT


def formatter_width(columns: int) -> int:
    """Click's help width in characters for a terminal of ``columns`` columns (``HelpFormatter.__init__``)."""
    return max(min(columns, 80) - 2, 50)


def render() -> str:
    """``ce --help`` as the Typer application prints it on a :data:`COLUMNS`-column terminal (stdout, final newline)."""
    import typer

    from commonroom.cli.main import app

    out = io.StringIO()
    with redirect_stdout(out):
        code = typer.main.get_command(app).main(["--help"], prog_name=PROG, standalone_mode=False,
                                                 terminal_width=formatter_width(COLUMNS))
    if code != 0:
        raise SystemExit(f"ce --help exited {code}: {out.getvalue()}")
    return out.getvalue()


def stale(path: Path = HELP_FILE) -> bool:
    """Whether ``path`` is missing or differs from :func:`render`."""
    return not path.exists() or path.read_bytes() != render().encode("utf-8")


def write(path: Path = HELP_FILE) -> None:
    """Write :func:`render` to ``path`` (UTF-8, ``\\n`` line ends on every platform)."""
    path.write_bytes(render().encode("utf-8"))
