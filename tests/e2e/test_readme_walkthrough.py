"""The README's *Try it* walk-through runs verbatim.

A fresh clone of this checkout (``git clone``: what is committed; where
there is no git, the README and ``examples/`` copied) gets ``.venv`` as
the running interpreter's environment (the set-up's install, already
done) and ``sample.md`` from the set-up command's own copy step; a real
room serves ``sample.md`` there. The commands are read from the clone's
README.md itself (the first ``sh`` block under ``## Try it``) and run by
bash, as they stand. Every line of the
README's *What you see* block is then found in what they printed, with ids
and relative times masked.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from tests.roomproc import start_room

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"


def _block(text: str, after: str, language: str) -> str:
    """The first fenced block of ``language`` after the line ``after``."""
    section = text[text.index(after):]
    match = re.search(rf"^```{language}\n(.*?)^```", section, re.S | re.M)
    assert match, (after, language)
    return match.group(1)


def _masked(text: str) -> str:
    """``text`` with ids, relative times and runs of spaces made comparable."""
    text = re.sub(r"\b(pr|s|p|ho|msg)_[0-9a-f]{4,24}…?", "ID", text)
    text = re.sub(r"\b(just now|\d+[smhd] ago|in \d+[smhd])", "WHEN", text)
    return " ".join(text.split())


def test_the_readme_walkthrough_runs_verbatim(tmp_path: Path):
    checkout = tmp_path / "commonroom"
    cloned = shutil.which("git") is not None and subprocess.run(
        ["git", "clone", "--quiet", str(ROOT), str(checkout)], capture_output=True).returncode == 0
    if not cloned:  # not a git checkout (an unpacked sdist): the files the walk-through reads
        checkout.mkdir(exist_ok=True)
        shutil.copy(README, checkout / "README.md")
        shutil.copytree(ROOT / "examples", checkout / "examples")
    (checkout / ".venv").symlink_to(Path(sys.prefix), target_is_directory=True)
    readme = (checkout / "README.md").read_text("utf-8")
    setup = _block(readme, "## Set up", "sh").strip()
    walk = _block(readme, "## Try it", "sh")
    seen = _block(readme, "What you see", "text")
    copy_step = next(part for part in setup.split(" && ") if "examples/sample.md" in part)
    subprocess.run(["bash", "-c", copy_step], cwd=checkout, check=True)  # the set-up's own copy of the sample
    assert (checkout / "sample.md").read_bytes() == (checkout / "examples" / "sample.md").read_bytes()

    room = start_room(checkout, name="sample.md")  # the set-up's `ce serve sample.md`, on free ports
    try:
        env = {k: v for k, v in os.environ.items() if k not in ("COMMONROOM_SESSION", "NO_COLOR", "FORCE_COLOR")}
        done = subprocess.run(["bash", "-euo", "pipefail", "-c", walk], cwd=checkout, capture_output=True,
                              text=True, timeout=120, env=env)
    finally:
        room.stop()
    assert done.returncode == 0, (done.stdout, done.stderr)
    assert all(line.startswith("invitation inv_") for line in done.stderr.splitlines()), done.stderr  # ce invite's note
    commands = [line.strip() for line in walk.splitlines()]
    for expected in seen.splitlines():  # each command the block shows is one of the walk-through, as it is
        if expected.startswith("$ "):
            assert re.sub(r"(^|\$\()ce ", r"\1.venv/bin/ce ", expected[2:]) in commands, expected
    printed = _masked(done.stdout)
    for expected in seen.splitlines():
        if expected.startswith("$ ") or expected.strip() in ("", "…"):
            continue
        assert _masked(expected) in printed, (expected, done.stdout)
    assert re.search(r"v2 committed by alice: shorter goals \(proposal pr_[0-9a-f]{24} approved by bob\)",
                     done.stdout), done.stdout
    # the remote participant: a folder without sample.md, its session file alone, reads the room
    remote = re.search(r"session s_[0-9a-f]{24} saved in carol\.json\n(.*)", done.stdout, re.S)
    assert remote and "shorter goals" in remote.group(1) and "+- Ship it." in remote.group(1), done.stdout
    assert not (checkout / "carol.json").exists()  # it was stored in the other folder
