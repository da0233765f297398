"""``ce``'s standard streams when they are gone: a closed stdout, a reader that left.

Shared by the console-script entry (:mod:`commonroom.cli.entry`) and the
Typer-free command runner (:mod:`commonroom.cli.quickread`); imports only
:mod:`os` and :mod:`sys` (``ce --help`` and ``ce read`` stay light).
"""

from __future__ import annotations

import os
import sys


def stdout_to_devnull() -> None:
    """After a ``BrokenPipeError``: stdout's descriptor goes to ``/dev/null``, so the flush at shutdown cannot fail."""
    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


def refuse_closed_stdout() -> None:
    """With standard output closed (``ce read >&-``), say so on stderr and exit 1.

    Python then sets ``sys.stdout`` to None: click would drop what it
    prints without a word, and ``ce``'s own output raised a traceback.
    The closed descriptors 0-2 are first pointed at ``/dev/null``, so no
    file this process opens can take their place (and be written to as
    if it were stdout).
    """
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
        except OSError:
            null = os.open(os.devnull, os.O_RDWR)
            if null != fd:
                os.dup2(null, fd)
                os.close(null)
    if sys.stderr is not None:
        print("ce: standard output is closed, so nothing can be printed "
              "(to discard what ce prints, redirect it to /dev/null)", file=sys.stderr)
    sys.exit(1)


def stdout_failed(error: BaseException) -> bool:
    """Whether the ``OSError`` ``error`` is standard output failing, not another file.

    True when writing what stdout still holds fails again, or when the
    innermost frame of ``error`` was writing to it: its line names
    ``stdout``, or one of its locals is stdout, its buffer, or an object
    writing to stdout (click's ``file``, Rich's console, ``ce observe``'s
    follower and its ``out``).
    """
    out = sys.stdout
    if out is None:
        return False
    try:
        out.flush()
    except (OSError, ValueError):
        return True
    trace = error.__traceback__
    if trace is None:
        return False
    while trace.tb_next is not None:
        trace = trace.tb_next
    frame = trace.tb_frame
    streams = (out, getattr(out, "buffer", None), sys.__stdout__)
    for value in list(frame.f_locals.values()):
        if any(value is s or getattr(value, "file", None) is s or getattr(value, "out", None) is s
               for s in streams if s is not None):
            return True
    import linecache  # only on this rare path

    return "stdout" in linecache.getline(frame.f_code.co_filename, trace.tb_lineno)


def refuse_failed_stdout(error: OSError) -> None:
    """Standard output cannot be written (``> /dev/full``, a full disk): one line on stderr, exit 1.

    A reader that left (``| head``, ``BrokenPipeError``) is not worth a
    line: exit 1 quietly, as click does. Either way stdout's descriptor
    then points at ``/dev/null``, so the interpreter's last flush cannot
    print a traceback of its own.
    """
    stdout_to_devnull()
    if not isinstance(error, BrokenPipeError) and sys.stderr is not None:
        reason = error.strerror or str(error)
        print(f"ce: cannot write to standard output: {reason}; nothing more was printed", file=sys.stderr)
    sys.exit(1)
