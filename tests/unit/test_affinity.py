"""COMMONROOM_CPU: the worker's two busy threads on one CPU (commonroom/affinity.py)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from commonroom.affinity import cpu_choice

pytestmark = pytest.mark.skipif(not hasattr(os, "sched_getaffinity"), reason="no CPU affinity here")


def test_choices():
    assert cpu_choice({}) == "auto"
    assert cpu_choice({"COMMONROOM_CPU": " ANY "}) == "any"
    allowed = sorted(os.sched_getaffinity(0))
    assert cpu_choice({"COMMONROOM_CPU": str(allowed[-1])}) == allowed[-1]
    for bad in ("-1", "1.5", "first", str(max(allowed) + 64)):
        with pytest.raises(ValueError, match="COMMONROOM_CPU"):
            cpu_choice({"COMMONROOM_CPU": bad})


PIN = """
import os, threading, time
from commonroom.affinity import pin_worker
early = threading.Thread(target=time.sleep, args=(1,))  # a thread already running is pinned too
early.start()
cpu = pin_worker()
late = []
threading.Thread(target=lambda: late.append(os.sched_getaffinity(0))).start()
time.sleep(0.2)
tasks = {t: os.sched_getaffinity(int(t)) for t in os.listdir("/proc/self/task")}
print(cpu, sorted(set(map(frozenset, tasks.values())), key=sorted), late)
"""


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two CPUs")
@pytest.mark.parametrize("choice", ["auto", "last", "any"])
def test_pin_worker_pins_every_thread_of_the_process(choice):
    allowed = sorted(os.sched_getaffinity(0))
    value = str(allowed[-1]) if choice == "last" else choice
    out = subprocess.run([sys.executable, "-c", PIN], capture_output=True, text=True, check=True,
                         env={**os.environ, "COMMONROOM_CPU": value}).stdout
    if choice == "any":
        assert out.startswith("None"), out
        return
    cpu = int(out.split()[0])
    assert cpu in allowed and (choice == "auto" or cpu == allowed[-1])
    assert f"[frozenset({{{cpu}}})] [{{{cpu}}}]" in out, out
