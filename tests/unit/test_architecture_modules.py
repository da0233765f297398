"""docs/architecture.md's module table names every module under ``commonroom/``.

The table (section *Modules*) is where a newcomer finds what a module is;
a module added without its line fails here, and so does a line left behind
for a module that is gone.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "commonroom"
ARCHITECTURE = ROOT / "docs" / "architecture.md"


def _modules() -> set[str]:
    return {p.relative_to(PACKAGE).as_posix() for p in PACKAGE.rglob("*.py")}


def _table_rows() -> set[str]:
    text = ARCHITECTURE.read_text("utf-8")
    section = text.split("## Modules\n", 1)[1].split("\n## ", 1)[0]
    return set(re.findall(r"^\| `([^`]+\.py)` \|", section, flags=re.M))


def test_every_module_has_a_line():
    modules = _modules()
    assert "engine/base.py" in modules and "__init__.py" in modules  # the walk works
    missing = sorted(modules - _table_rows())
    assert not missing, f"docs/architecture.md's module table lacks {missing}"


def test_no_line_for_a_module_that_is_gone():
    stale = sorted(_table_rows() - _modules())
    assert not stale, f"docs/architecture.md's module table names modules that do not exist: {stale}"
