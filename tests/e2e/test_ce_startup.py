"""``ce`` starts light: the commands that only talk to a room import no server parts.

``ce --help`` and ``ce read`` (which start in 150 ms) must not import
falcon, gunicorn, jsonschema, peewee, the engine, the MCP bridge or rich:
each is imported by the command that needs it (``ce serve``, ``ce mcp``,
the operator's offline reads). Nor pydantic, which typer 0.29 imports to
coerce any non-bool option (why typer is pinned to 0.28, see
pyproject.toml). ``ce read`` imports neither Typer nor any other command's
module (commonroom.cli.quickread parses it; tests/e2e/test_ce_quickread.py); ``ce --help``
prints the help stored at codegen time and imports no command at all
(tests/unit/test_cli_help.py). The test
checks the set of modules a real ``ce`` run loaded (a subprocess, against a real room), not a timing.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.roomproc import ce

HEAVY = ("falcon", "gunicorn", "jsonschema", "peewee", "rich", "markdown_it", "pydantic", "pydantic_core",
         "commonroom.engine", "commonroom.mcp_bridge", "commonroom.server", "commonroom.http")

RUN = """
import atexit, json, sys
out = sys.argv[1]
atexit.register(lambda: open(out, "w").write(json.dumps(sorted(sys.modules))))
sys.argv = ["ce", *sys.argv[2:]]
from commonroom.cli.entry import main  # what the installed ce runs
main()
"""


def modules_of(tmp_path: Path, *args: str, columns: str = "80") -> tuple[subprocess.CompletedProcess, set[str]]:
    """Run ``ce ARGS`` in a fresh interpreter (a terminal ``columns`` wide); its exit and the modules loaded at exit."""
    out = tmp_path / "modules.json"
    done = subprocess.run([sys.executable, "-c", RUN, str(out), *args], capture_output=True, text=True,
                          timeout=60, env={**os.environ, "COLUMNS": columns})
    return done, set(json.loads(out.read_text()))


def heavy(modules: set[str]) -> list[str]:
    return sorted(m for m in modules if any(m == h or m.startswith(h + ".") for h in HEAVY))


@pytest.mark.parametrize("columns", ["80", "60"], ids=["the stored help", "typer's help"])
def test_help_imports_no_server_parts(tmp_path, columns):
    """On 60 columns Typer renders the help: every command module is imported, and none imports a server part."""
    done, modules = modules_of(tmp_path, "--help", columns=columns)
    assert done.returncode == 0 and "Usage: ce" in done.stdout
    assert ("commonroom.cli.editing" in modules) is (columns == "60")
    assert heavy(modules) == []
    assert "commonroom.client" not in modules  # the byte client: imported by the commands that call a room


#: The modules of the commands other than ``ce read``: ``ce`` imports a command's module when it runs.
OTHER_COMMANDS = ("access", "board", "call", "console", "handoffs", "mcp", "observe", "serve", "status")


def test_read_imports_no_server_parts(room, tmp_path):
    session_file = tmp_path / "s.json"
    joined = ce("join", room.invite("ana", "read"), "--session-file", str(session_file))
    assert joined.returncode == 0, joined.stderr
    done, modules = modules_of(tmp_path, "read", "--raw", "--session-file", str(session_file))
    assert done.returncode == 0, done.stderr
    assert done.stdout == room.document.read_text("utf-8")
    assert heavy(modules) == []
    assert sorted(m for m in modules if m.split(".")[0] in ("typer", "click")) == []  # commonroom.cli.quickread
    assert sorted(m for m in modules if m.rsplit(".", 1)[-1] in OTHER_COMMANDS
                  and m.startswith("commonroom.cli.")) == []
