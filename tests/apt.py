"""Debian packages the tests need, installed with ``apt-get`` when missing (CI runs only
``pip install -e '.[test]' && pytest``): Chromium (tests/chromium.py), WireGuard (tests/overlay.py)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path


def _apt(*args: str) -> subprocess.CompletedProcess:
    prefix: list[str] = []
    if os.geteuid() != 0:
        if shutil.which("sudo") is None:
            raise RuntimeError(f"installing needs root (no sudo here): run `apt-get {' '.join(args)}` as root")
        prefix = ["sudo", "-n"]
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    return subprocess.run([*prefix, "apt-get", *args], capture_output=True, text=True, env=env, timeout=900)


def ensure(paths: dict[str, Path], recommends: bool = True) -> None:
    """Install each package of ``paths`` (package → a file it provides) whose file is missing.

    ``apt-get install -y`` (with ``--no-install-recommends`` unless
    ``recommends``), after an ``apt-get update`` when the first try fails. Raises ``RuntimeError`` (with apt's error) when
    the install is impossible, so the test fails with the reason.
    """
    missing = [package for package, path in paths.items() if not path.exists()]
    if not missing:
        return
    if shutil.which("apt-get") is None:
        raise RuntimeError(f"{', '.join(missing)} missing and there is no apt-get to install them")
    command = ("install", "-y", *([] if recommends else ["--no-install-recommends"]), *missing)
    done = _apt(*command)
    if done.returncode != 0:
        _apt("update")
        done = _apt(*command)
    absent = [str(paths[package]) for package in missing if not paths[package].exists()]
    if done.returncode != 0 or absent:
        raise RuntimeError(f"apt-get install {' '.join(missing)} failed ({done.returncode}): {done.stderr[-2000:]}")
