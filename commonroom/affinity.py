"""The room's worker on one CPU, so concurrent writes do not pay for CPU-to-CPU hand-overs.

The worker runs two busy Python threads: the event loop (HTTP, MCP,
streams) and the writer (every transaction, ``operations/runner.py``).
Only one of them runs Python at a time (the GIL), and the writer gives the
GIL up around every SQLite call. On two CPUs each hand-over is a wake-up on
the other CPU and the objects both threads touch move between the CPUs'
caches, so a write costs several times its own work in wall time. With
both threads on one CPU the hand-over is cheap (the bench ``writes`` row,
docs/performance.md). The worker cannot use more than one
CPU for Python anyway; what it loses is only overlap of C work (SQLite's
own steps, compression), which the bench does not miss.

``COMMONROOM_CPU`` chooses: ``auto`` (default) keeps the CPU the worker
started on; a number pins to that CPU; ``any`` leaves the worker free to
move (the operating system's default). Several rooms on one machine start
on different CPUs as the scheduler spreads them; an operator who wants
them elsewhere sets a number per room.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Mapping

log = logging.getLogger("commonroom.affinity")

#: The environment variable read by :func:`cpu_choice`.
VARIABLE = "COMMONROOM_CPU"


def cpu_choice(environ: Mapping[str, str] = os.environ) -> int | str:
    """``"auto"``, ``"any"`` or a CPU number from ``COMMONROOM_CPU``.

    Raises ``ValueError`` (a one-line reason) for anything else, or for a
    CPU this process may not run on.
    """
    raw = environ.get(VARIABLE, "auto").strip().lower() or "auto"
    if raw in ("auto", "any"):
        return raw
    if not raw.isdigit():
        raise ValueError(f"{VARIABLE}={raw!r}: give auto, any or a CPU number")
    cpu = int(raw)
    if hasattr(os, "sched_getaffinity") and cpu not in os.sched_getaffinity(0):
        allowed = ",".join(map(str, sorted(os.sched_getaffinity(0))))
        raise ValueError(f"{VARIABLE}={cpu}: this process may run on CPUs {allowed} only")
    return cpu


def _current_cpu() -> int | None:
    """The CPU the calling thread runs on now (``/proc/thread-self/stat``, field 39), or None."""
    try:
        stat = Path("/proc/thread-self/stat").read_text()
        return int(stat.rsplit(")", 1)[1].split()[36])
    except (OSError, ValueError, IndexError):
        return None


def pin_worker(environ: Mapping[str, str] = os.environ) -> int | None:
    """Pin every thread of this process to one CPU (see the module docstring); the CPU, or None.

    Called in the worker right after the fork, before the room's threads
    start (threads started later inherit the CPU; any already running are
    pinned too, by their ids). None when ``COMMONROOM_CPU=any``, on one
    CPU, or where the system has no affinity call. ``ValueError`` as
    :func:`cpu_choice`.
    """
    choice = cpu_choice(environ)
    if choice == "any" or not hasattr(os, "sched_setaffinity"):
        return None
    allowed = sorted(os.sched_getaffinity(0))
    if len(allowed) <= 1:
        return None
    if isinstance(choice, int):
        cpu = choice
    else:
        current = _current_cpu()
        cpu = current if current in allowed else allowed[0]
    try:
        threads = [int(t) for t in os.listdir("/proc/self/task")]
    except OSError:
        threads = [0]
    for tid in threads:
        try:
            os.sched_setaffinity(tid, {cpu})
        except OSError:  # a thread that just ended
            pass
    log.info("worker pinned to CPU %d (%s=%s)", cpu, VARIABLE, choice)
    return cpu
