"""Every operation of the table is a ``ce`` command, or the table says why not.

A ``ce`` command calls an operation by its name (``session_call(…,
"proposal_approve", …)``, ``operator_read(file, "versions_list", …)``,
``owner_call(…, "console_code")``; :mod:`commonroom.cli.routes` turns the
name into the route). This reads the sources of :mod:`commonroom.cli` for
those names, so it holds whatever the commands are called: an operation
added to the table without a command and without ``no_command`` fails here,
and so does a ``no_command`` left on an operation a command now calls.
"""

from __future__ import annotations

import ast
from pathlib import Path

from commonroom.operations import OPERATIONS

CLI = Path(__file__).resolve().parents[2] / "commonroom" / "cli"


def called_by_ce() -> dict[str, set[str]]:
    """Operation name → the ``commonroom/cli`` modules with a call passing it as a positional argument."""
    names = {op.name for op in OPERATIONS}
    out: dict[str, set[str]] = {}
    for path in sorted(CLI.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if isinstance(node, ast.Call):
                for arg in node.args:
                    if isinstance(arg, ast.Constant) and arg.value in names:
                        out.setdefault(arg.value, set()).add(path.name)
    return out


def test_every_operation_has_a_command_or_says_why_not() -> None:
    called = called_by_ce()
    missing = [op.name for op in OPERATIONS if op.name not in called and not op.no_command]
    assert not missing, ("no ce command calls these operations: add one, or give the operation "
                         f"no_command='why' in commonroom/operations/table.py: {missing}")


def test_no_command_is_not_said_of_an_operation_a_command_calls() -> None:
    called = called_by_ce()
    stale = {op.name: sorted(called[op.name]) for op in OPERATIONS if op.no_command and op.name in called}
    assert not stale, f"these operations have a ce command now: drop their no_command: {stale}"


def test_the_scan_finds_the_commands_it_should() -> None:
    called = called_by_ce()
    assert "proposals.py" in called["proposal_approve"]
    assert "console.py" in called["console_code"]
    assert "versions.py" in called["versions_diff"] and "versions.py" in called["version_get"]
