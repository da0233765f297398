"""``ce`` starts light: the commands that only talk to a room import no server parts.

``ce --help`` and ``ce read`` (issue 13: start in 150 ms) must not import
falcon, gunicorn, jsonschema, peewee, the engine, the MCP bridge or rich:
each is imported by the command that needs it (``ce serve``, ``ce mcp``,
the operator's offline reads). Nor pydantic, which typer 0.29 imports to
coerce any non-bool option (why typer is pinned to 0.28, see
pyproject.toml). ``ce read`` imports no other command's module either
(commonroom.cli.main builds a command when it is looked up). The test
checks the set of modules a real ``ce`` run loaded (a subprocess, against a real room), not a timing.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.roomproc import ce

HEAVY = ("falcon", "gunicorn", "jsonschema", "peewee", "rich", "markdown_it", "pydantic", "pydantic_core",
         "commonroom.engine", "commonroom.mcp_bridge", "commonroom.server", "commonroom.http")

RUN = """
import atexit, json, sys
out = sys.argv[1]
atexit.register(lambda: open(out, "w").write(json.dumps(sorted(sys.modules))))
sys.argv = ["ce", *sys.argv[2:]]
from commonroom.cli.main import main
main()
"""


def modules_of(tmp_path: Path, *args: str) -> tuple[subprocess.CompletedProcess, set[str]]:
    """Run ``ce ARGS`` in a fresh interpreter; its exit and the modules it had loaded at exit."""
    out = tmp_path / "modules.json"
    done = subprocess.run([sys.executable, "-c", RUN, str(out), *args], capture_output=True, text=True,
                          timeout=60)
    return done, set(json.loads(out.read_text()))


def heavy(modules: set[str]) -> list[str]:
    return sorted(m for m in modules if any(m == h or m.startswith(h + ".") for h in HEAVY))


def test_help_imports_no_server_parts(tmp_path):
    done, modules = modules_of(tmp_path, "--help")
    assert done.returncode == 0 and "Usage: ce" in done.stdout
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
    assert sorted(m for m in modules if m.rsplit(".", 1)[-1] in OTHER_COMMANDS
                  and m.startswith("commonroom.cli.")) == []
