"""This very program: the name it was started by, and the command that runs it again from anywhere.

Read by ``ce``'s entry (:mod:`commonroom.cli.entry`: whether the stored help
applies) and by the room process (:mod:`commonroom.server`: the commands it
prints), so neither imports the other. Imports only :mod:`os` and :mod:`sys`
at import time.
"""

from __future__ import annotations

import os
import sys


def program_name() -> str:
    """Click's ``_detect_program_name`` for a script: the file name of ``sys.argv[0]``, else ``""`` (``python -m``)."""
    if getattr(sys.modules.get("__main__"), "__package__", None) not in (None, ""):
        return ""
    return os.path.basename(sys.argv[0])


def running_ce() -> str:
    """This very ``ce``, as a command that runs from any directory: the absolute path of the script
    (``/home/me/commonroom/.venv/bin/ce``), or ``/…/python -m commonroom``; quoted for a shell where needed."""
    from shlex import quote
    from shutil import which

    if program_name() == "":
        return f"{quote(sys.executable)} -m commonroom"
    path = sys.argv[0]
    if os.sep not in path:
        path = which(path) or path
    return quote(os.path.abspath(path))
