"""The room's allocator (commonroom/memory.py): the re-execution under glibc malloc and the trimmer."""

from __future__ import annotations

import subprocess
import sys

import pytest

from commonroom.memory import Trimmer, use_system_malloc

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
