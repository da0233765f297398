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
