"""Bring the docs up to date with the operation table and ``schema/`` (part of ``python -m codegen``).

Usage::

    python -m codegen.docs            # rewrite the docs only (python -m codegen does this too)
    python -m codegen.docs --check    # exit 1 when a docs file is behind

Two kinds of generated text in hand-written pages:

- the tables of :data:`commonroom.operations.docs.BLOCKS` (``docs/protocol.md``,
  ``docs/mcp.md``), from the operation table;
- the fact spans ``<!-- fact:NAME -->…<!-- /fact -->`` in ``docs/*.md``,
  ``README.md`` and the skills' ``*.md``: the vocabulary or bound
  :data:`commonroom.vocabulary.FACTS` names (the capabilities, the message
  kinds, the lease TTL bounds), read from ``schema/``.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

from commonroom.operations import OPERATIONS
from commonroom.operations.docs import BLOCKS, render
from commonroom.vocabulary import FACTS

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
#: ``<!-- fact:NAME -->text<!-- /fact -->`` (the text on one line or several).
FACT = re.compile(r"(<!-- fact:([a-z0-9-]+) -->)(.*?)(<!-- /fact -->)", re.S)


def pages() -> list[Path]:
    """The markdown files that may hold generated text."""
    return sorted([*DOCS.glob("*.md"), ROOT / "README.md", *(ROOT / "commonroom" / "skills").rglob("*.md")])


def fill_facts(text: str, where: str = "") -> str:
    """``text`` with every fact span holding its current value; ``ValueError`` naming an unknown fact."""
    def value(match: re.Match[str]) -> str:
        name = match.group(2)
        if name not in FACTS:
            raise ValueError(f"{where}: unknown fact {name!r} (known: {', '.join(FACTS)})")
        return match.group(1) + FACTS[name] + match.group(4)

    return FACT.sub(value, text)


def rendered(path: Path) -> str:
    """``path``'s text with its operation blocks and fact spans brought up to date."""
    text = path.read_text("utf-8")
    if path.parent == DOCS and path.name in BLOCKS:
        text = render(path.name, text, OPERATIONS)
    return fill_facts(text, str(path.relative_to(ROOT)))


def stale() -> list[str]:
    """The files (relative to the repository) whose generated text is behind."""
    return [str(path.relative_to(ROOT)) for path in pages() if rendered(path) != path.read_text("utf-8")]


def write() -> list[str]:
    """Rewrite the files that are behind; the ones written."""
    written = stale()
    for name in written:
        path = ROOT / name
        path.write_text(rendered(path), "utf-8")
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m codegen.docs")
    parser.add_argument("--check", action="store_true", help="fail when the docs are behind")
    args = parser.parse_args(argv)
    if args.check:
        behind = stale()
        for name in behind:
            print(f"{name} is behind the operation table or schema/; run python -m codegen", file=sys.stderr)
        return 1 if behind else 0
    for name in write():
        print(f"wrote {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
