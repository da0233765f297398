"""Fixtures: a real room process per test (or per module) on loopback."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from tests.roomproc import Room, corpus_files, start_room

pytest_plugins = ("tests.each_alone",)  # pytest --each-alone

SAMPLE = Path(__file__).resolve().parents[1] / "examples" / "sample.md"


@pytest.fixture
def room(tmp_path: Path):
    """A room serving a copy of examples/sample.md, stopped after the test."""
    r = start_room(tmp_path, SAMPLE)
    yield r
    r.stop()


@pytest.fixture(scope="module")
def shared_room(tmp_path_factory):
    """One room for a whole module (read-mostly tests)."""
    r = start_room(tmp_path_factory.mktemp("room"), SAMPLE)
    yield r
    r.stop()


@pytest.fixture(params=[p.name for p in corpus_files()])
def corpus_doc(request) -> Path:
    """Each corpus document in turn."""
    return next(p for p in corpus_files() if p.name == request.param)


def pytest_configure(config) -> None:
    """Let the processes the tests start get Ctrl-C as a person's would.

    A suite started in the background of a script (``.ci/run &``, ``nohup``)
    ignores SIGINT, and an ignored signal is inherited through ``exec``: every
    ``ce`` a test started would then ignore the Ctrl-C the test sends it. A
    Python handler is not inherited (the child gets the default), so the
    runner takes Python's own.
    """
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:
    """Name the seed of the random order (pytest-randomly) at the end of every run, ``-q`` included,
    so a failure that depends on the order can be replayed with ``-p randomly --randomly-seed=N``."""
    seed = getattr(config.option, "randomly_seed", None)
    if isinstance(seed, int) and config.pluginmanager.has_plugin("randomly"):
        terminalreporter.write_line(f"tests ran in random order: --randomly-seed={seed} replays it")


@pytest.fixture(scope="module")
def chromium():
    """A launched headless Chromium for the module (Debian's package, installed if missing; never a download)."""
    from playwright.sync_api import sync_playwright

    from tests.chromium import ARGS, ensure_chromium

    executable = ensure_chromium()
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(executable), args=ARGS)
        yield browser
        browser.close()
