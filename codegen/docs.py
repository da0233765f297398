"""Bring the docs tables derived from the operation table up to date.

Usage::

    python -m codegen.docs            # rewrite the blocks in docs/
    python -m codegen.docs --check    # exit 1 when a block is behind the table

The blocks and their renderers are :data:`commonroom.operations.docs.BLOCKS`.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from commonroom.operations import OPERATIONS
from commonroom.operations.docs import BLOCKS, render

DOCS = Path(__file__).resolve().parents[1] / "docs"


def stale() -> list[str]:
    """The docs files whose blocks differ from the table."""
    return [name for name in BLOCKS
            if render(name, (DOCS / name).read_text("utf-8"), OPERATIONS) != (DOCS / name).read_text("utf-8")]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m codegen.docs")
    parser.add_argument("--check", action="store_true", help="fail when docs/ is behind the operation table")
    args = parser.parse_args(argv)
    behind = stale()
    if args.check:
        for name in behind:
            print(f"docs/{name} is behind the operation table; run python -m codegen.docs", file=sys.stderr)
        return 1 if behind else 0
    for name in behind:
        path = DOCS / name
        path.write_text(render(name, path.read_text("utf-8"), OPERATIONS), "utf-8")
        print(f"wrote docs/{name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
