"""Headless Chromium for the console's browser tests: Debian's ``chromium``, driven by Playwright.

:func:`ensure_chromium` installs the Debian package with ``apt-get`` when
``/usr/bin/chromium`` is missing (CI runs only ``pip install -e '.[test]'
&& pytest``); Playwright (the ``test`` extra) never downloads a browser of
its own. When the install is impossible it raises, so the test fails with
the reason instead of being skipped.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

CHROMIUM = Path("/usr/bin/chromium")
#: How the tests launch it (no sandbox: CI containers run as root).
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def _apt(*args: str) -> subprocess.CompletedProcess:
    prefix: list[str] = []
    if os.geteuid() != 0:
        if shutil.which("sudo") is None:
            raise RuntimeError(f"{CHROMIUM} is missing and installing it needs root (no sudo here): "
                               "run `apt-get install -y chromium` as root")
        prefix = ["sudo", "-n"]
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    return subprocess.run([*prefix, "apt-get", *args], capture_output=True, text=True, env=env, timeout=900)


def ensure_chromium() -> Path:
    """``/usr/bin/chromium``, installed with apt-get first if it is missing (RuntimeError if it cannot be)."""
    if CHROMIUM.exists():
        return CHROMIUM
    if shutil.which("apt-get") is None:
        raise RuntimeError(f"{CHROMIUM} is missing and there is no apt-get to install Debian's chromium package")
    done = _apt("install", "-y", "chromium")
    if done.returncode != 0:
        _apt("update")
        done = _apt("install", "-y", "chromium")
    if done.returncode != 0 or not CHROMIUM.exists():
        raise RuntimeError(f"apt-get install chromium failed ({done.returncode}): {done.stderr[-2000:]}")
    return CHROMIUM
