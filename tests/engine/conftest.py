"""Fixtures of the in-process engine tests: an injected clock and an engine on a temp file.

``engine`` serves the test module's ``TEXT`` (``"# Plan\\n"`` when it has none)
on a fresh sidecar with ``clock``, a :class:`tests.fakeclock.FakeClock` that
only moves when the test moves it.
"""

from __future__ import annotations

import pytest

from tests.fakeclock import FakeClock, open_engine


@pytest.fixture
def clock():
    return FakeClock()


@pytest.fixture
def engine(request, tmp_path, clock):
    engine = open_engine(tmp_path, getattr(request.module, "TEXT", "# Plan\n"), clock=clock)
    yield engine
    engine.close()
