"""The room process's allocator: glibc ``malloc`` and a periodic ``malloc_trim``, so a long-running room stays flat.

A room runs for days. Under CPython's own small-object allocator
(``pymalloc``) the worker's resident memory creeps up under a churn of
streams and sessions while its live Python data stays flat: freed objects
leave 1 MB arenas partly used, and a partly used arena is never given back
(``docs/hardening.md``, *Memory*). Under glibc's ``malloc`` (``PYTHONMALLOC=malloc``) with
``malloc_trim(0)`` every :data:`TRIM_SECONDS` the same load stays flat.

- :func:`use_system_malloc` is called by ``ce serve`` before anything else:
  when ``PYTHONMALLOC`` is unset it sets it to ``malloc`` and re-executes the
  same command line (the same process id; the allocator is chosen when the
  interpreter starts, so this is the only way). An operator who sets
  ``PYTHONMALLOC`` (``pymalloc`` included) keeps that choice.
- :class:`Trimmer` is a daemon thread in the worker that calls glibc's
  ``malloc_trim(0)`` every :data:`TRIM_SECONDS` (a few milliseconds; the
  call releases the GIL, so requests go on). Where ``malloc_trim`` does not
  exist (musl, macOS) it does nothing.
"""

from __future__ import annotations

import ctypes
import logging
import os
import signal
import sys
import threading
from typing import Any, Callable

log = logging.getLogger("commonroom.memory")

#: Seconds between two ``malloc_trim(0)`` calls in the worker.
TRIM_SECONDS = 20.0
#: The environment variable the choice of allocator is read from (CPython's own).
ALLOCATOR_VARIABLE = "PYTHONMALLOC"


def use_system_malloc(environ: dict[str, str] | None = None,
                      execv: Callable[[str, list[str]], Any] = os.execv) -> None:
    """Re-execute this command under glibc ``malloc`` unless ``PYTHONMALLOC`` is already set.

    Returns only when nothing is to be done (the variable is set, by the
    operator or by the re-execution itself, or the platform is not Linux);
    otherwise the process image is replaced (``os.execv``: same pid, same
    open descriptors, same arguments, ``sys.orig_argv`` so interpreter
    options such as ``-X`` survive).
    """
    env = os.environ if environ is None else environ
    if env.get(ALLOCATOR_VARIABLE) is not None or not sys.platform.startswith("linux"):
        return
    env[ALLOCATOR_VARIABLE] = "malloc"
    sys.stdout.flush()
    sys.stderr.flush()
    # A Ctrl-C while the new image starts its interpreter would end it with a traceback from
    # its first imports; blocked, it waits (the mask and a pending signal survive execv) until
    # commonroom.cli.entry.main unblocks it, where it stops the command cleanly.
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        execv(sys.executable, [sys.executable, *sys.orig_argv[1:]])
    finally:  # execv returned or failed: this image goes on
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


def _malloc_trim() -> Callable[[int], int] | None:
    """glibc's ``malloc_trim`` (``int malloc_trim(size_t pad)``), or None where there is none."""
    try:
        libc = ctypes.CDLL("libc.so.6")  # glibc's soname; find_library would run ``ldconfig -p`` (~30 ms at start)
    except OSError:
        from ctypes.util import find_library

        name = find_library("c")
        if name is None:
            return None
        try:
            libc = ctypes.CDLL(name)
        except OSError:
            return None
    try:
        trim = libc.malloc_trim
    except AttributeError:
        return None
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    return trim


class Trimmer:
    """A daemon thread giving freed heap pages back to the system every ``seconds``.

    ``start()`` and ``stop()`` are the room's lifespan hooks (both safe to
    call twice); ``trims`` counts the calls made. Without ``malloc_trim``
    both are no-ops.
    """

    def __init__(self, seconds: float = TRIM_SECONDS):
        self.seconds = seconds
        self.trims = 0
        self._trim = _malloc_trim()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def available(self) -> bool:
        """True where glibc's ``malloc_trim`` was found."""
        return self._trim is not None

    def start(self) -> None:
        """Start the thread (no-op without ``malloc_trim`` or when already started)."""
        if self._trim is None or self._thread is not None:
            return
        self._thread = threading.Thread(target=self._run, name="commonroom-malloc-trim", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop the thread (waits at most one trim)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def trim(self) -> None:
        """One ``malloc_trim(0)`` now."""
        if self._trim is not None:
            self._trim(0)
            self.trims += 1

    def _run(self) -> None:
        while not self._stop.wait(self.seconds):
            try:
                self.trim()
            except Exception:  # pragma: no cover - ctypes call; never fatal
                log.exception("malloc_trim failed")
