"""``ce --help`` prints the help stored at codegen time, without Typer, so it starts within 150 ms.

- The stored text (``commonroom/cli/help.txt``) is byte for byte what the
  Typer application prints for ``ce --help`` on an 80-column terminal, run
  in a fresh interpreter through :func:`commonroom.cli.main.main` (which has
  no fast path), so a command added or reworded without ``python -m codegen``
  fails here as well as in ``python -m codegen --check``.
- The installed ``ce --help`` prints exactly that text on stdout, exits 0,
  and imports neither Typer nor click nor any command module (its imports
  as ``python -X importtime`` lists them).
- Where click would print something else (a 60-column terminal, another
  program name, shell completion asked for) and wherever the arguments are
  not exactly ``--help``, ``ce`` prints what Typer prints.
- :func:`commonroom.cli.entry.terminal_columns` agrees with
  ``shutil.get_terminal_size`` (click's source of the width).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from codegen import cli_help
from commonroom.cli import entry
from tests.roomproc import ce, ce_path

STORED = cli_help.HELP_FILE

#: ``ce ARGS`` in a fresh interpreter through MODULE's ``main``, with ``sys.argv[0]`` = PROG (argv[1]).
RUN = "import sys; sys.argv = sys.argv[1:]; from commonroom.cli.{module} import main; main()"



def run(module: str, *args: str, prog: str = "ce", env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """``PROG ARGS`` run by ``commonroom.cli.MODULE.main`` in a fresh interpreter (stdout and stderr as bytes)."""
    base = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", entry.COMPLETE_VAR)}
    return subprocess.run([sys.executable, "-c", RUN.format(module=module), prog, *args], capture_output=True,
                          env={**base, **(env or {})}, timeout=60)


def test_the_stored_help_is_what_typer_prints_on_80_columns():
    done = run("main", "--help", env={"COLUMNS": "80"})
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(b"Usage: ce [OPTIONS] COMMAND [ARGS]...\n")
    assert STORED.read_bytes() == done.stdout, "run python -m codegen"


def test_the_stored_help_lists_every_command_under_what_it_needs():
    from commonroom.cli.main import ALIASES, COMMANDS, SECTIONS

    text = STORED.read_text("utf-8")
    listed: list[str] = []
    for title, names in SECTIONS.items():
        rows = text.split(f"{title}:\n", 1)[1].split("\n\n", 1)[0].splitlines()
        section = [line.split()[0] for line in rows if not line.startswith("   ")]  # a description wraps, further in
        assert section == list(names), title
        listed += section
    assert sorted(listed) == sorted(COMMANDS)  # each command once, under the heading of what it needs
    rows = {line.split()[0] for line in text.splitlines() if line.startswith("  ") and not line.startswith("   ")}
    assert not set(ALIASES) & rows  # the names before the groups: hidden


def test_aliases_run_the_grouped_commands():
    """Each alias is the function of a command of a group, so ``ce approve`` and ``ce proposal approve`` are one."""
    from importlib import import_module

    from commonroom.cli.main import ALIASES

    for alias, target in ALIASES.items():
        module, _, function = target.partition(":")
        assert callable(getattr(import_module(f"commonroom.cli.{module}"), function)), alias


@pytest.mark.parametrize("columns", ["80", "200", None], ids=["80", "200", "unset"])
def test_ce_help_prints_the_stored_text(columns):
    """``None``: no COLUMNS, and stdout is a pipe, so click assumes 80 columns."""
    done = ce("--help", env={"COLUMNS": columns} if columns else None)
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.encode("utf-8") == STORED.read_bytes()


def imported(*args: str) -> tuple[subprocess.CompletedProcess, list[str]]:
    """The installed ``ce ARGS`` run under ``python -X importtime``; the typer, click and commonroom modules it imported."""
    done = subprocess.run([sys.executable, "-X", "importtime", ce_path(), *args], capture_output=True, text=True,
                          timeout=60, env={**os.environ, "COLUMNS": "80"})
    names = [line.rsplit("|", 1)[1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")]
    return done, sorted(n for n in names if n.split(".")[0] in ("typer", "click", "commonroom"))


def test_ce_help_imports_neither_typer_nor_a_command():
    done, modules = imported("--help")
    assert done.returncode == 0 and done.stdout.encode("utf-8") == STORED.read_bytes()
    # program and stdio: the entry's own pieces (os and sys only), shared with the room process and the fast path
    assert modules == ["commonroom", "commonroom.cli", "commonroom.cli.entry", "commonroom.cli.stdio",
                       "commonroom.program"]


def test_importtime_sees_typer_when_the_entry_hands_over():
    done, modules = imported("--version")
    assert done.returncode == 0 and done.stdout.startswith("ce ")
    assert {"typer", "commonroom.cli.main"} <= set(modules)


def test_ce_help_on_60_columns_is_typers():
    done = ce("--help", env={"COLUMNS": "60"})
    typers = run("main", "--help", env={"COLUMNS": "60"})
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.encode("utf-8") == typers.stdout != STORED.read_bytes()
    assert max(len(line) for line in done.stdout.splitlines()) <= 58


@pytest.mark.parametrize("prog, args, env, stored", [
    ("ce", ["--help"], {"COLUMNS": "79"}, False),
    ("commonroom-ce", ["--help"], {"COLUMNS": "80"}, False),
    ("ce", ["--help"], {"COLUMNS": "80", entry.COMPLETE_VAR: "source_bash"}, False),
    ("ce", ["read", "--help"], {"COLUMNS": "80"}, False),
    ("ce", ["--help", "--help"], {"COLUMNS": "80"}, True),  # the same text, printed by Typer
], ids=["79 columns", "another name", "completion", "a command's help", "twice"])
def test_elsewhere_the_entry_prints_what_typer_does(prog, args, env, stored):
    ours, typers = run("entry", *args, prog=prog, env=env), run("main", *args, prog=prog, env=env)
    assert (ours.returncode, ours.stdout, ours.stderr) == (typers.returncode, typers.stdout, typers.stderr)
    assert (ours.stdout == STORED.read_bytes()) is stored


@pytest.mark.parametrize("columns", [None, "", "0", "-3", "x", "60", "80", "200"])
def test_terminal_columns_is_shutils(monkeypatch, columns):
    if columns is None:
        monkeypatch.delenv("COLUMNS", raising=False)
    else:
        monkeypatch.setenv("COLUMNS", columns)
    assert entry.terminal_columns() == shutil.get_terminal_size().columns


def test_codegen_check_fails_on_a_stale_copy(tmp_path: Path):
    copy = tmp_path / "help.txt"
    assert not cli_help.stale()
    copy.write_bytes(STORED.read_bytes().replace(b"Show this message and exit.", b"Show this message."))
    done = subprocess.run([sys.executable, "-m", "codegen", "--check", "--cli-help", str(copy)],
                          cwd=cli_help.ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 1 and "is not what `ce --help` prints" in done.stderr
    assert "run: python -m codegen" in done.stderr
    copy.unlink()
    assert cli_help.stale(copy)


@pytest.mark.parametrize("command", [["revoke"], ["read"], ["lease", "list"], ["observe"]])
def test_a_commands_help_shows_literals_with_single_backticks(command):
    """The docstring's reST ``literal`` is `literal` in ``--help`` (commonroom.cli.usage.CeCommand)."""
    done = run("main", *command, "--help", env={"COLUMNS": "200"})
    assert done.returncode == 0, done.stderr
    assert b"``" not in done.stdout and re.search(rb"`[^`\s][^`]*`", done.stdout)
