"""``ce read`` without Typer prints exactly what Typer's ``ce read`` prints (issue 13, point 6).

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

import os
import subprocess
import sys
from pathlib import Path
from typing import Annotated

import pytest
import typer

from codegen import cli_fast
from commonroom.cli import entry, fastpath
from tests.conftest import SAMPLE
from tests.roomproc import ce, start_room

#: ``ce ARGS`` in a fresh interpreter through MODULE's ``main``, with ``sys.argv[0]`` = ``ce``.
RUN = "import sys; sys.argv = ['ce', *sys.argv[1:]]; from commonroom.cli.{module} import main; main()"
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


def run(module: str, args: list[str], importtime: bool = False) -> tuple[int, bytes, bytes, bool]:
    """``ce ARGS`` through ``commonroom.cli.MODULE.main``: ``(status, stdout, stderr, typer imported)``."""
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", entry.COMPLETE_VAR)}
    flags = ["-X", "importtime"] if importtime else []
    done = subprocess.run([sys.executable, *flags, "-c", RUN.format(module=module), *args], capture_output=True,
                          env={**env, "COLUMNS": "80"}, timeout=60)
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


@pytest.mark.parametrize("session", ["missing.json", "not-json.json"])
def test_a_bad_session_file_is_the_same_error(tmp_path: Path, session: str):
    (tmp_path / "not-json.json").write_text("{")
    argv = ["read", "--session-file", str(tmp_path / session)]
    status, stdout, stderr, typer_imported = run("entry", argv, importtime=True)
    assert (status, stdout, stderr) == run("main", argv)[:3]
    assert status != 0 and b"session" in stderr and not typer_imported


def test_a_reader_that_left_ends_ce_read_as_typer_does(reader):
    """``ce read | true``: the reader is gone before the answer is written (EPIPE). Click exits 1 and
    prints nothing; so must the fast path, not a ``BrokenPipeError`` traceback."""
    room, session = reader
    outcomes = []
    for module in ("entry", "main"):
        proc = subprocess.Popen([sys.executable, "-c", RUN.format(module=module), "read", "--raw",
                                 "--session-file", str(session)], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        assert proc.stdout is not None and proc.stderr is not None
        proc.stdout.close()
        outcomes.append((proc.wait(timeout=60), proc.stderr.read()))
        proc.stderr.close()
    assert outcomes[0] == outcomes[1] == (1, b"")


def test_the_stored_spec_is_what_codegen_renders():
    assert not cli_fast.stale()
    spec = fastpath.load_spec()
    assert spec is not None and list(spec) == ["read"]
    assert [p["name"] for p in spec["read"]["params"]] == ["heading", "lines", "session_file", "raw", "json_output"]


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
