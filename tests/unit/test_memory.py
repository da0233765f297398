"""The room's allocator (commonroom/memory.py): the re-execution under glibc malloc and the trimmer."""

from __future__ import annotations

import os
import platform
import subprocess
import sys
from pathlib import Path

import pytest

from commonroom.memory import Trimmer, _malloc_trim, use_system_malloc
from tests.roomproc import ce_path

#: Frees ~60 MB of 1 KB blocks (glibc's heap, not pymalloc's: blocks over 512 bytes)
#: while every 200th stays, so glibc cannot give the heap back by itself; prints the
#: RSS (KB) after the free and after the trimmer ran for ``RUN`` seconds.
FRAGMENTED_HEAP = """
import sys, time
from commonroom.memory import Trimmer
def rss():
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS"):
            return int(line.split()[1])
trimmer = Trimmer(seconds=float(sys.argv[1]))
blocks = [bytes(1000) + bytes([i % 256]) for i in range(60000)]
keep = blocks[::200]
del blocks
before = rss()
trimmer.start(); time.sleep(0.6); trimmer.stop()
print(before, rss(), trimmer.trims)
"""


def run_heap(seconds: float) -> tuple[int, int, int]:
    out = subprocess.run([sys.executable, "-c", FRAGMENTED_HEAP, str(seconds)], capture_output=True,
                         text=True, check=True, env={"PYTHONMALLOC": "malloc", "PATH": ""}).stdout
    before, after, trims = map(int, out.split())
    return before, after, trims


@pytest.mark.skipif(not Trimmer().available, reason="no glibc malloc_trim here")
def test_the_trimmer_gives_a_fragmented_heap_back():
    before, after, trims = run_heap(0.05)
    assert trims >= 3
    assert before - after > 40_000, (before, after)  # most of the ~60 MB freed is returned
    before, after, trims = run_heap(60.0)  # no trim within the run: the heap stays
    assert trims == 0 and before - after < 10_000, (before, after)


def test_serve_re_executes_under_malloc_unless_the_operator_chose():
    calls: list[tuple[str, list[str]]] = []
    env: dict[str, str] = {}
    use_system_malloc(env, execv=lambda path, argv: calls.append((path, argv)))
    if sys.platform.startswith("linux"):
        assert env == {"PYTHONMALLOC": "malloc"}
        assert calls == [(sys.executable, [sys.executable, *sys.orig_argv[1:]])]
    for chosen in ("pymalloc", "malloc", ""):
        calls.clear()
        env = {"PYTHONMALLOC": chosen}
        use_system_malloc(env, execv=lambda path, argv: calls.append((path, argv)))
        assert calls == [] and env == {"PYTHONMALLOC": chosen}


def test_stop_without_start_and_twice():
    trimmer = Trimmer(seconds=0.01)
    trimmer.stop()
    trimmer.start()
    trimmer.start()
    trimmer.stop()
    trimmer.stop()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the re-execution is Linux only")
def test_ce_serve_re_executes_before_it_imports_typer(tmp_path: Path):
    """``ce serve`` re-executes in ``ce``'s entry, not after Typer parsed it (~0.2 s of a room's start).

    ``-X importtime`` survives the re-execution (``sys.orig_argv``), so
    stderr holds one import log per process; the first must not name
    Typer (or click), the second does (it parses the command, and the
    room reports the missing file).
    """
    env = {k: v for k, v in os.environ.items() if k != "PYTHONMALLOC"}
    done = subprocess.run([sys.executable, "-X", "importtime", ce_path(), "serve", str(tmp_path / "none.md"),
                           "--port", "0", "--owner-port", "0"], capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 2 and "no such file" in done.stderr, done.stderr[-500:]
    logs = done.stderr.split("import time: self [us] | cumulative | imported package")
    assert len(logs) == 3, len(logs)  # before the first header, then one log per process
    first, second = logs[1], logs[2]
    assert "typer" not in first and "click" not in first, [line for line in first.splitlines() if "typer" in line]
    assert "typer" in second


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="glibc only: elsewhere there is no libc.so.6")
def test_malloc_trim_is_found_without_running_ldconfig(monkeypatch: pytest.MonkeyPatch):
    """glibc is loaded by its soname: ``ctypes.util.find_library`` runs ``ldconfig -p`` (~30 ms of every start)."""
    import ctypes.util

    def refuse(name: str) -> None:
        raise AssertionError(f"find_library({name!r}) was called")

    monkeypatch.setattr(ctypes.util, "find_library", refuse)
    assert _malloc_trim() is not None
