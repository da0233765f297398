"""``ce``'s console-script entry: ``ce --help`` and ``ce read`` without Typer (so they start fast).

``ce read`` and the other commands of the stored spec are parsed and run
by :mod:`commonroom.cli.quickread` when their arguments are plain.

``ce --help`` prints the root help stored beside this module
(:data:`HELP_TEXT`, package data) instead of importing Typer and
every command module to list the commands (:class:`commonroom.cli.main.LazyCommands`).
``python -m codegen`` renders it from the real application, as click prints
it for the program name :data:`PROG` on a terminal of :data:`COLUMNS`
columns or more, and ``python -m codegen --check`` fails when it is stale.

The stored text is printed only where click would print exactly it:
``sys.argv[1:] == ["--help"]``, click's program name is :data:`PROG`, the
terminal is at least :data:`COLUMNS` columns wide (click's help is then
78 columns wide), and no shell completion is asked for (:data:`COMPLETE_VAR`).
Anything else, ``--help`` on a narrower terminal included, runs
:func:`commonroom.cli.main.main` as before.

This module imports only :mod:`os`, :mod:`sys` (loaded at every
interpreter start), :mod:`commonroom.program` and :mod:`commonroom.cli.stdio`
(which import only them); its package's ``__init__`` modules import nothing.
"""

from __future__ import annotations

import os
import signal
import sys

from ..program import program_name
from .stdio import refuse_closed_stdout, refuse_failed_stdout, stdout_failed, stdout_to_devnull

#: The program name click detects when ``ce`` runs (the script's file name).
PROG = "ce"
#: Terminal columns from which click's help is always the same text: its
#: formatter is ``max(min(columns, 80) - 2, 50)`` = 78 characters wide from 80 on.
COLUMNS = 80
#: Shell completion's variable for :data:`PROG` (Typer's ``_{PROG}_COMPLETE``): set, ``ce`` completes instead.
COMPLETE_VAR = f"_{PROG.upper()}_COMPLETE"
#: The stored ``ce --help``: exactly what click writes to stdout, its final newline included (UTF-8).
HELP_TEXT = "help.txt"


def terminal_columns() -> int:
    """The terminal's width in columns, as ``shutil.get_terminal_size().columns`` (click's source) says it.

    ``COLUMNS`` when it is a positive integer; else the size of the terminal
    on ``sys.__stdout__``; else 80. Written out because importing
    :mod:`shutil` costs ~5 ms (bz2, lzma); tests/unit/test_cli_help.py
    compares the two.
    """
    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    if columns > 0:
        return columns
    try:
        return os.get_terminal_size(sys.__stdout__.fileno()).columns or 80  # type: ignore[union-attr]
    except (AttributeError, ValueError, OSError):
        return 80


def stored_help_applies() -> bool:
    """Whether click would print :data:`HELP_TEXT` for this process's arguments, environment and terminal."""
    return (sys.argv[1:] == ["--help"] and program_name() == PROG and not os.environ.get(COMPLETE_VAR)
            and terminal_columns() >= COLUMNS)


def stored_help() -> str | None:
    """The text of :data:`HELP_TEXT`; None when it cannot be read (then Typer renders the help)."""
    try:
        with open(os.path.join(os.path.dirname(__file__), HELP_TEXT), encoding="utf-8") as file:
            return file.read()
    except (OSError, UnicodeDecodeError):
        return None


def print_stored(text: str) -> bool:
    """Write ``text`` to stdout as click's ``echo`` does; False when stdout cannot take it (then Typer prints).

    A text stdout encodes the whole string before writing a byte, so a
    character its encoding lacks (``UnicodeEncodeError``) leaves nothing
    half-printed; click re-wraps such a stream itself.
    """
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except (UnicodeEncodeError, AttributeError):  # AttributeError: no stdout at all (None)
        return False
    except BrokenPipeError:  # as click: the reader left; exit 1 without a traceback at shutdown
        stdout_to_devnull()
        sys.exit(1)
    return True


def main() -> None:
    """Console-script entry point (``[project.scripts] ce``).

    The stored help; else a command of the stored spec that
    :mod:`commonroom.cli.quickread` parses (``ce read``); else
    :func:`commonroom.cli.main.main` (Typer). Standard output closed:
    :func:`refuse_closed_stdout`; standard output that cannot be written
    (``ce versions > /dev/full``, a full disk, a reader that left):
    :func:`refuse_failed_stdout`, one line and exit 1, never a traceback.
    Ctrl-C while ``ce`` starts: exit 130 (``ce serve`` says ``room
    stopped``), no traceback; a running room stops on it by itself
    (:func:`commonroom.server.serve`).
    """
    try:
        if hasattr(signal, "pthread_sigmask"):  # a Ctrl-C held over the re-execution (memory.py) arrives here
            signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
        try:
            _run()
        finally:  # what is still buffered is written here, where a failure can be reported
            if sys.stdout is not None:
                sys.stdout.flush()
    except OSError as exc:
        if not stdout_failed(exc):
            raise
        refuse_failed_stdout(exc)
    except KeyboardInterrupt:  # Ctrl-C before a command took it over (while starting): no traceback
        if sys.argv[1:2] == ["serve"]:
            print("room stopped", flush=True)
        sys.exit(130)


def _run() -> None:
    if sys.stdout is None:
        refuse_closed_stdout()
    if sys.argv[1:2] == ["serve"]:
        # before Typer is imported (~0.2 s): the room re-executes under glibc malloc (commonroom/memory.py),
        # and what this process imported would be paid for again; ``serve_command`` asks the same, a no-op then
        from ..memory import use_system_malloc

        use_system_malloc()
    text = stored_help() if stored_help_applies() else None
    if text is not None and print_stored(text):
        return
    if program_name() == PROG and not os.environ.get(COMPLETE_VAR):  # else completion may be asked for
        from .quickread import load_spec, plan, run

        chosen = plan(sys.argv[1:], load_spec())
        if chosen is not None:
            sys.exit(run(chosen))
    from .main import main as typer_main

    typer_main()
