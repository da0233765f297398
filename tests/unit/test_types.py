"""The type checker passes over ``commonroom/`` (and the generated types it imports).

mypy is pinned in the ``test`` extra and configured in ``pyproject.toml``
(``[tool.mypy]``); any error fails this test, with mypy's report as the
message. Run it by hand with ``python -m mypy`` from the repository root.
"""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from importlib.metadata import version
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_pinned_mypy_is_the_one_installed() -> None:
    extra = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))["project"]["optional-dependencies"]["test"]
    pins = [re.fullmatch(r"mypy==(\S+)", spec) for spec in extra]
    pinned = [m.group(1) for m in pins if m]
    assert pinned == [version("mypy")], f"mypy must be pinned (mypy==X) in the test extra; installed {version('mypy')}"


def test_mypy_reports_no_errors() -> None:
    done = subprocess.run([sys.executable, "-m", "mypy"], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, f"mypy {version('mypy')} found errors:\n{done.stdout}{done.stderr}"
    assert "Success: no issues found" in done.stdout
