"""``pytest --each-alone`` (tests/each_alone.py) runs each test as if it ran alone.

A throwaway pair of tests, the second relying on what the first left in their module's fixture, passes
in file order and must fail under the option; a test that leaves an environment variable set must fail
in its teardown. Both run in a child pytest on a folder of their own, with tests/each_alone.py as plugin.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

PAIR = '''
import os
import pytest


@pytest.fixture(scope="module")
def box():
    return {}


def test_a_writes(box):
    box["joined"] = True


def test_b_relies_on_a(box):
    assert box.get("joined")


def test_c_leaves_a_variable():
    os.environ["EACH_ALONE_LEAK"] = "1"
'''


def _run(folder: Path, *options: str) -> str:
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "tests.each_alone", "-p", "no:randomly",
                           "-p", "no:cacheprovider", "-q", "-rfE", *options, str(folder)],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    return done.stdout + done.stderr


def test_each_alone_breaks_an_order_dependent_pair(tmp_path: Path) -> None:
    (tmp_path / "test_pair.py").write_text(PAIR)
    in_order = _run(tmp_path)
    assert "3 passed" in in_order, in_order
    alone = _run(tmp_path, "--each-alone")
    assert "FAILED " in alone and "test_pair.py::test_b_relies_on_a" in alone, alone
    assert "ERROR " in alone and "variables ['EACH_ALONE_LEAK']" in alone, alone
    assert "1 failed" in alone and "1 error" in alone, alone
