"""The file follows the committed head, off the request path, never over an outside edit."""

from __future__ import annotations

import os
import time

from commonroom.engine.filesync import FileFollower, file_state


def test_background_writes_reach_the_newest_head(tmp_path):
    path = tmp_path / "doc.md"
    path.write_text("v1\n")
    follower = FileFollower(path, background=True)
    try:
        for n in range(2, 40):
            follower.submit(n, f"v{n}\n")
        assert follower.flush(10)
        assert path.read_text() == "v39\n"
        assert follower.on_disk == 39 and not follower.busy()
        assert follower.stat == file_state(path)
    finally:
        follower.close()


def test_an_outside_edit_is_never_overwritten(tmp_path):
    path = tmp_path / "doc.md"
    path.write_text("v1\n")
    follower = FileFollower(path, background=True)
    try:
        follower.submit(2, "v2\n")
        assert follower.flush(10)
        time.sleep(0.01)
        path.write_text("edited by hand, longer\n")
        follower.submit(3, "v3\n")
        assert follower.flush(10)
        assert path.read_text() == "edited by hand, longer\n"
        assert follower.diverged and follower.on_disk == 2
        # the engine records the edit, then adopts the file: writing resumes
        follower.adopt(4)
        follower.submit(5, "v5\n")
        assert follower.flush(10)
        assert path.read_text() == "v5\n" and not follower.diverged
    finally:
        follower.close()


def test_synchronous_mode_writes_at_once_and_keeps_the_mode(tmp_path):
    path = tmp_path / "doc.md"
    path.write_text("v1\n")
    os.chmod(path, 0o640)
    follower = FileFollower(path, background=False)
    follower.submit(2, "v2\n")
    assert path.read_text() == "v2\n"
    assert os.stat(path).st_mode & 0o777 == 0o640
    assert not list(tmp_path.glob(".*commonroom-tmp"))
    follower.close()
