"""What ``python -m codegen`` writes from the application itself, after ``generated/``.

Usage (``python -m codegen`` runs it in a child process once the types are written)::

    python -m codegen.derived            # write the stored ce --help, ce read options, ce routes, the docs
    python -m codegen.derived --check    # exit 1 when one of them differs

These outputs come from the package (the Typer application, the operation
table, :data:`commonroom.vocabulary.FACTS`), which imports the generated
types: run in their own process after the types are written, a type the
engine uses and the schema has just gained is there when they import it.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from codegen import cli_fast, cli_help, cli_routes, docs


def check(help_path: Path, fast_path: Path, routes_path: Path) -> bool:
    """Print what is stale to stderr; True when everything matches."""
    behind = []
    if cli_help.stale(help_path):
        behind.append(f"{help_path} is not what `ce --help` prints")
    if cli_fast.stale(fast_path):
        behind.append(f"{fast_path} is not the options `ce read` declares")
    if cli_routes.stale(routes_path):
        behind.append(f"{routes_path} is not the routes the operation table declares")
    behind += [f"{name} is behind the operation table or schema/" for name in docs.stale()]
    for line in behind:
        print(line, file=sys.stderr)
    return not behind


def write(help_path: Path, fast_path: Path, routes_path: Path) -> list[str]:
    """Write every derived output; the paths written."""
    cli_help.write(help_path)
    cli_fast.write(fast_path)
    cli_routes.write(routes_path)
    return [str(help_path), str(fast_path), str(routes_path), *docs.write()]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m codegen.derived", description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail on drift, write nothing")
    parser.add_argument("--cli-help", type=Path, default=cli_help.HELP_FILE, help="the stored `ce --help`")
    parser.add_argument("--cli-fast", type=Path, default=cli_fast.SPEC_PATH, help="the stored options of `ce read`")
    parser.add_argument("--cli-routes", type=Path, default=cli_routes.ROUTES_PATH, help="the stored routes of `ce`")
    args = parser.parse_args(argv)
    if args.check:
        return 0 if check(args.cli_help, args.cli_fast, args.cli_routes) else 1
    print("wrote " + ", ".join(write(args.cli_help, args.cli_fast, args.cli_routes)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
