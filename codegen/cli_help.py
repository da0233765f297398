"""Render ``ce --help`` into ``commonroom/cli/help.txt``, which ``ce --help`` prints (issue 13, point 6).

Usage::

    python -m codegen.cli_help            # rewrite commonroom/cli/help.txt
    python -m codegen.cli_help --check    # exit 1 when it differs from the application

``python -m codegen`` (and ``--check``) does the same after ``generated/``.
The text is what the real Typer application (:data:`commonroom.cli.main.app`,
every command built) writes to stdout for ``ce --help`` on a terminal of
:data:`commonroom.cli.entry.COLUMNS` columns: click's help formatter is
``max(min(columns, 80) - 2, 50)`` characters wide, 78 here, and ``echo``
ends it with a newline. :mod:`commonroom.cli.entry` prints it byte for byte.
"""

from __future__ import annotations

import argparse
import io
import sys
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m codegen.cli_help", description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail when the stored help is stale, write nothing")
    parser.add_argument("--out", type=Path, default=HELP_FILE)
    args = parser.parse_args(argv)
    if args.check:
        if stale(args.out):
            print(f"{args.out} is behind `ce --help`; run python -m codegen.cli_help", file=sys.stderr)
            return 1
        return 0
    write(args.out)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
