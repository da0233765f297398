"""``ce read`` without Typer prints exactly what Typer's ``ce read`` prints.

Against a real room, each case runs twice in fresh interpreters: the
installed entry (:func:`commonroom.cli.entry.main`, under ``python -X
importtime`` to see whether Typer was imported) and Typer's own
:func:`commonroom.cli.main.main`, which has no fast path. Exit status,
stdout and stderr must be the same bytes. The plain forms must not import
Typer (the fast path ran); every other form must (Typer parsed it). The
stored spec (``commonroom/cli/fast.json``) must be what codegen renders
from the application, and codegen refuses an option the fast path could
not parse as click does.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Annotated

import pytest
import typer

from codegen import cli_fast
from commonroom.errors import EXIT_CODES
from commonroom.cli import entry, quickread
from tests.conftest import SAMPLE
from tests.roomproc import ce, ce_path, start_room

#: ``PROG ARGS`` in a fresh interpreter through MODULE's ``main`` (``sys.argv[0]`` = PROG, argv[1]).
RUN = "import sys; sys.argv = sys.argv[1:]; from commonroom.cli.{module} import main; main()"


@pytest.fixture(scope="module")
def reader(tmp_path_factory):
    """A room on examples/sample.md and a reader's session file: ``(room, session_file)``."""
    folder = tmp_path_factory.mktemp("fast")
    room = start_room(folder, SAMPLE)
    session = folder / "reader.json"
    joined = ce("join", room.invite("reader", "read"), "--session-file", str(session))
    assert joined.returncode == 0, joined.stderr
    yield room, session
    room.stop()


def run(module: str, args: list[str], importtime: bool = False, prog: str = "ce", env: dict[str, str] | None = None,
        wrap: list[str] | None = None) -> tuple[int, bytes, bytes, bool]:
    """``PROG ARGS`` through ``commonroom.cli.MODULE.main``: ``(status, stdout, stderr, typer imported)``.

    ``env`` adds to the environment; ``wrap`` runs the interpreter under that command (``unshare -U``).
    """
    base = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", entry.COMPLETE_VAR)}
    flags = ["-X", "importtime"] if importtime else []
    done = subprocess.run([*(wrap or []), sys.executable, *flags, "-c", RUN.format(module=module), prog, *args],
                          capture_output=True, env={**base, "COLUMNS": "80", **(env or {})}, timeout=60)
    log = [line for line in done.stderr.splitlines(keepends=True) if line.startswith(b"import time:")]
    stderr = b"".join(line for line in done.stderr.splitlines(keepends=True) if not line.startswith(b"import time:"))
    typer = any(line.rsplit(b"|", 1)[1].strip() == b"typer" for line in log)
    return done.returncode, done.stdout, stderr, typer


PLAIN = [
    [], ["--raw"], ["--json"], ["--raw", "--raw", "--json"],
    ["--heading", "Release plan", "--heading", "Design"], ["--heading=Release plan", "--heading=Design", "--json"],
    ["--heading", "Release plan", "--heading", "Nowhere"],
    ["--lines", "2-4"], ["--lines=3"], ["--lines", "3:5", "--json"], ["--lines", "1", "--lines", "6-7"],
    ["--lines", "x"], ["--lines", "900-901"], ["--lines", "900-901", "--json"], ["--lines=2=3"],
    ["--heading", "Design", "--lines", "1"], ["--heading", "Design", "--lines", "1", "--json"],
]
TYPERS = [
    ["--help"], ["--bogus"], ["extra"], ["--lines"], ["--lines="], ["--raw=1"], ["--", "--raw"],
    ["--lines", "-1"], ["--heading", "--json"], ["-h"], ["--jso"],
]


@pytest.mark.parametrize("args, fast", [(a, True) for a in PLAIN] + [(a, False) for a in TYPERS],
                         ids=[" ".join(a) or "(none)" for a in PLAIN + TYPERS])
def test_ce_read_prints_what_typer_prints(reader, args, fast):
    room, session = reader
    argv = ["read", "--session-file", str(session), *args]
    status, stdout, stderr, typer_imported = run("entry", argv, importtime=True)
    assert (status, stdout, stderr) == run("main", argv)[:3]
    assert typer_imported is not fast
    if args == ["--raw"]:
        assert status == 0 and stdout == SAMPLE.read_bytes()


BAD_SESSIONS = {
    "not-json.json": "{",
    "a-list.json": "[]",
    "string-transport.json": json.dumps({"token": "crs_x", "transport": "loopback"}),
    "no-token.json": json.dumps({"transport": {"type": "loopback", "address": "127.0.0.1", "port": 9}}),
    "port-text.json": json.dumps({"token": "crs_x", "transport": {"type": "loopback", "address": "127.0.0.1",
                                                                 "port": "abc"}}),
    "no-address.json": json.dumps({"token": "crs_x", "transport": {"type": "loopback", "port": 9}}),
    "local-no-path.json": json.dumps({"token": "crs_x", "transport": {"type": "local"}}),
}


@pytest.mark.parametrize("session", ["missing.json", *BAD_SESSIONS])
def test_a_bad_session_file_is_the_same_one_line_error(tmp_path: Path, session: str):
    """No traceback: the session file is refused, or its transport, with the code's exit status."""
    for name, text in BAD_SESSIONS.items():
        (tmp_path / name).write_text(text)
    argv = ["read", "--session-file", str(tmp_path / session)]
    status, stdout, stderr, typer_imported = run("entry", argv, importtime=True)
    assert (status, stdout, stderr) == run("main", argv)[:3]
    assert status not in (0, 1) and stderr.startswith(b"ce: ") and b"Traceback" not in stderr and not typer_imported


def test_a_reader_that_left_ends_ce_read_as_typer_does(reader):
    """``ce read | true``: the reader is gone before the answer is written (EPIPE). Click exits 1 and
    prints nothing; so must the fast path, not a ``BrokenPipeError`` traceback."""
    room, session = reader
    outcomes = []
    for module in ("entry", "main"):
        proc = subprocess.Popen([sys.executable, "-c", RUN.format(module=module), "ce", "read", "--raw",
                                 "--session-file", str(session)], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        assert proc.stdout is not None and proc.stderr is not None
        proc.stdout.close()
        outcomes.append((proc.wait(timeout=60), proc.stderr.read()))
        proc.stderr.close()
    assert outcomes[0] == outcomes[1] == (1, b"")


@pytest.mark.parametrize("command", [["read"], ["versions"], ["--help"]], ids=["fast path", "typer", "stored help"])
def test_a_closed_stdout_is_one_line_on_stderr(reader, command):
    """``ce read >&-``: Python sets ``sys.stdout`` to None; ce said it with a traceback (or, through
    click, printed nothing and exited 0). Now every path: one line on stderr, exit 1."""
    _, session = reader
    args = [*command, "--session-file", str(session)] if command != ["--help"] else command
    done = subprocess.run(["sh", "-c", 'exec "$0" "$@" >&-', ce_path(), *args], capture_output=True, timeout=60)
    assert (done.returncode, done.stderr) == (1, b"ce: standard output is closed, so nothing can be printed "
                                                 b"(to discard what ce prints, redirect it to /dev/null)\n")


def test_ctrl_c_ends_ce_read_as_typer_does(reader, tmp_path: Path):
    """Ctrl-C while the room does not answer: Typer 0.28 exits 130 and prints nothing; so does the fast path."""
    _, session = reader
    silent = socket.create_server(("127.0.0.1", 0))  # accepts (the kernel's backlog) and never answers
    stalled = tmp_path / "stalled.json"
    data = json.loads(session.read_text("utf-8"))
    stalled.write_text(json.dumps({**data, "transport": {**data["transport"], "port": silent.getsockname()[1]}}))
    outcomes = []
    try:
        for module in ("entry", "main"):
            # SIGINT as a terminal's Ctrl-C finds it (tests/conftest.py: even where the suite runs ignoring it)
            proc = subprocess.Popen([sys.executable, "-c", RUN.format(module=module), "ce", "read",
                                     "--session-file", str(stalled)],
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            silent.settimeout(60)
            conn, _ = silent.accept()  # started and connected (not a fixed sleep: a loaded machine starts slower)
            time.sleep(0.3)  # sent its request, waiting for the answer
            proc.send_signal(signal.SIGINT)
            out, err = proc.communicate(timeout=30)
            conn.close()
            outcomes.append((proc.returncode, out, err))
    finally:
        silent.close()
    assert outcomes[0] == outcomes[1] == (130, b"", b"")


@pytest.mark.skipif(subprocess.run(["unshare", "-U", "true"], capture_output=True).returncode != 0
                    if shutil.which("unshare") else True, reason="needs unshare -U (a user namespace)")
def test_an_unreadable_session_file_is_typers_usage_error(reader, tmp_path: Path):
    """Typer's path type checks that an existing path is readable (a usage error, status 2). Root reads
    anything, so both run as an unmapped user (``unshare -U``), to whom the 0000 file is unreadable."""
    _, session = reader
    locked = tmp_path / "locked.json"
    locked.write_bytes(session.read_bytes())
    locked.chmod(0)
    tmp_path.chmod(0o755)
    argv = ["read", "--session-file", str(locked)]
    status, stdout, stderr, typer_imported = run("entry", argv, importtime=True, wrap=["unshare", "-U"])
    assert (status, stdout, stderr) == run("main", argv, wrap=["unshare", "-U"])[:3]
    assert status == 2 and b"is not readable" in stderr and typer_imported


def test_completion_under_another_program_name_is_typers(reader):
    """``cex`` (a renamed ``ce``) with ``_CEX_COMPLETE`` set completes, as Typer does; it does not read."""
    _, session = reader
    env = {"_CEX_COMPLETE": "complete_bash", "COMP_WORDS": "cex read --hea", "COMP_CWORD": "2"}
    argv = ["read", "--session-file", str(session)]
    status, stdout, stderr, typer_imported = run("entry", argv, importtime=True, prog="cex", env=env)
    assert (status, stdout, stderr) == run("main", argv, prog="cex", env=env)[:3]
    assert status == 0 and b"--heading" in stdout and typer_imported


def test_the_stored_spec_is_what_codegen_renders():
    assert not cli_fast.stale()
    spec = quickread.load_spec()
    assert spec is not None and list(spec) == ["read"]
    assert [p["name"] for p in spec["read"]["params"]] == ["file", "heading", "lines", "version", "session_file", "raw",
                                                           "json_output"]
    assert spec["read"]["params"][0]["kind"] == "argument"  # ce read FILE (the operator): Typer parses it


def test_codegen_check_fails_on_a_stale_spec(tmp_path: Path):
    copy = tmp_path / "fast.json"
    copy.write_text(cli_fast.SPEC_PATH.read_text("utf-8").replace('"--lines"', '"--line"'), "utf-8")
    done = subprocess.run([sys.executable, "-m", "codegen", "--check", "--cli-fast", str(copy)],
                          cwd=cli_fast.ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 1 and "is not the options `ce read` declares" in done.stderr


def test_codegen_refuses_an_option_the_fast_path_cannot_parse():
    app = typer.Typer()

    @app.command()
    def counted(verbose: Annotated[int, typer.Option("-v", count=True)] = 0,
                name: Annotated[str, typer.Option(envvar="NAME")] = "x") -> None:
        """A command with a count and an option read from the environment."""

    command = typer.main.get_command(app)
    for param in command.params:
        with pytest.raises(SystemExit, match=f"the parameter '{param.name}'"):
            cli_fast._kind("counted", param)


def test_a_heading_path_in_one_option_is_told_how_to_give_it(reader):
    """``ce propose`` prints a region as ``Release plan › Goals``; given to one --heading it names no
    heading, and the next step says a path is one --heading per title."""
    _, session = reader
    status, _, stderr, _ = run("entry", ["read", "--session-file", str(session), "--heading", "Release plan › Goals"])
    assert status == EXIT_CODES["invalid_region"]
    assert "one --heading per title" in stderr.decode("utf-8")
    status, stdout, _, _ = run("entry", ["read", "--session-file", str(session), "--heading", "Release plan",
                                         "--heading", "Goals"])
    assert status == 0 and stdout.startswith(b"## Goals")
