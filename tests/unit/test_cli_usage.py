"""``ce``'s usage lines name their arguments as its help does: ``FILE A [B]``, never typer's ``{file}``.

Every command and subcommand of the real ``ce`` application (built the way
``ce`` builds them, :data:`commonroom.cli.main.COMMANDS`) is asked for its
help text; one is run as the installed ``ce`` to check the whole path.
"""

from __future__ import annotations

import re
from typing import Any, Iterator

import typer

from commonroom.cli.main import app
from tests.roomproc import ce


def commands() -> Iterator[tuple[str, Any]]:
    """``(path, click command)`` for every command of ``ce``, groups included."""
    root = typer.main.get_command(app)
    stack = [("ce", root)]
    while stack:
        path, command = stack.pop()
        yield path, command
        for name in getattr(command, "commands", {}):
            stack.append((f"{path} {name}", command.commands[name]))




def test_no_usage_line_has_a_brace_placeholder():
    seen = {}
    for path, command in commands():
        usage = command.get_usage(command.context_class(command, info_name=path))
        assert "{" not in usage and "}" not in usage, usage
        seen[path] = usage
    assert len(seen) > 40  # every command was built
    assert seen["ce version diff"] == "Usage: ce version diff [OPTIONS] [FILE] A [B]"
    assert seen["ce proposal show"] == "Usage: ce proposal show [OPTIONS] [FILE] PROPOSAL_ID"
    assert seen["ce board complete"] == "Usage: ce board complete [OPTIONS] BOARD MESSAGE_ID ANSWER"
    assert seen["ce serve"] == "Usage: ce serve [OPTIONS] FILE"


def test_the_installed_ce_prints_the_usage_and_names_a_missing_argument_the_same_way():
    done = ce("version", "diff", "--help")
    assert done.returncode == 0 and done.stdout.startswith("Usage: ce version diff [OPTIONS] [FILE] A [B]\n"), done.stdout
    assert re.search(r"^  \[FILE\] A +From version", done.stdout, re.M), done.stdout
    done = ce("serve")
    assert done.returncode == 2 and "Missing argument 'FILE'." in done.stderr, done.stderr
