"""A small run of the long-poll bench (``tests/bench/longpoll.py``): the script works, every wait wakes.

The figures at 1,000 waits come from running the script itself (docs/boards.md).
"""

from __future__ import annotations

from tests.bench.longpoll import run_level


def test_the_long_poll_bench_at_a_small_level():
    figures = run_level(8, rounds=2, wait=10, idle=0.2)
    assert figures["opened"] == 16 and figures["answered"] == 16 and figures["wrong"] == 0, figures
    assert figures["probe_failures"] == 0 and figures["probe_n"] > 0
