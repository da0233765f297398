"""Headless Chromium for the console's browser tests: Debian's ``chromium``, driven by Playwright.

:func:`ensure_chromium` installs the Debian package with ``apt-get`` when
``/usr/bin/chromium`` is missing (CI runs only ``pip install -e '.[test]'
&& pytest``); Playwright (the ``test`` extra) never downloads a browser of
its own. When the install is impossible it raises, so the test fails with
the reason instead of being skipped.
"""

from __future__ import annotations

from pathlib import Path

from tests.apt import ensure

CHROMIUM = Path("/usr/bin/chromium")
#: How the tests launch it (no sandbox: CI containers run as root).
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def ensure_chromium() -> Path:
    """``/usr/bin/chromium``, installed with apt-get first if it is missing (RuntimeError if it cannot be)."""
    ensure({"chromium": CHROMIUM})
    return CHROMIUM
