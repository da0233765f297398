"""The code says why it is so today, not which ticket made it so; the performance page stays short.

Comments, docstrings and messages in ``commonroom/``, ``tests/`` and
``codegen/`` give the present reason: a tracker's number means nothing to
a reader of the code (nor to one of an installed wheel). The third-party
texts under ``tests/data/`` (changelogs used as documents) are quoted as
they are. ``docs/performance.md`` holds the current figures and what makes
them, not their history: at most 300 lines.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CITED = re.compile(r"\bissues?\s*(?:#\s*)?\d", re.IGNORECASE)
QUOTED = ROOT / "tests" / "data"


def sources() -> list[Path]:
    out = []
    for top in ("commonroom", "tests", "codegen"):
        for path in sorted((ROOT / top).rglob("*")):
            inside = path.relative_to(ROOT).parts
            if path.is_file() and "__pycache__" not in inside and not path.is_relative_to(QUOTED) \
                    and "node_modules" not in inside and not any(part.startswith(".") for part in inside):
                # a dot-folder (the clients' .venv a test makes, caches) is installed third-party code, not ours
                out.append(path)
    return out


def test_no_issue_number_is_cited_in_the_code() -> None:
    found = []
    for path in sources():
        try:
            text = path.read_text("utf-8")
        except UnicodeDecodeError:
            continue
        for number, line in enumerate(text.splitlines(), 1):
            if CITED.search(line):
                found.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert not found, "write the present reason instead of the ticket:\n" + "\n".join(found)


def test_the_pattern_finds_a_citation() -> None:
    word = "issue"  # spelled apart, so this file cites nothing itself
    for cited in (f"({word} 13, point 6)", f"{word.title()} 5 (3):", f"{word}s 3 and 4", f"see {word} #12"):
        assert CITED.search(cited), cited
    for fine in ("this room did not issue that invitation", "the issue's example"):
        assert not CITED.search(fine), fine


def test_the_performance_page_is_at_most_300_lines() -> None:
    lines = (ROOT / "docs" / "performance.md").read_text("utf-8").count("\n")
    assert lines <= 300, f"docs/performance.md is {lines} lines: keep the current figures, drop their history"
