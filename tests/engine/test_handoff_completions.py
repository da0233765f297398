"""``handoff_id`` completions (``registry.add_completion("handoff_id", …)``): the ids the session can read."""

from __future__ import annotations

import pytest

from commonroom.errors import PermissionDenied
from commonroom.mcp import build_registry
from commonroom.mcp.registry import Context
from commonroom.mcp.resources import Subscriptions
from tests.fakeclock import FakeClock, join, open_engine


def test_handoff_ids_complete_for_readers_newest_first(tmp_path):
    clock = FakeClock()
    engine = open_engine(tmp_path, "# Doc\n", clock=clock)
    try:
        registry = build_registry(Subscriptions(), plugins="")
        source = registry.completion_source("ref/prompt", "any_prompt", "handoff_id")
        assert source is not None
        alice, _ = join(engine, "alice", ["read", "handoff"])
        nobody, _ = join(engine, "nobody", ["observe"])
        first = engine.create_handoff(alice, "one")["handoff"]["id"]
        clock.advance(1)
        second = engine.create_handoff(alice, "two")["handoff"]["id"]

        def ctx(actor):
            return Context(engine=engine, actor=actor, method="completion/complete", params={}, registry=registry)

        assert list(source(ctx(alice), "")) == [second, first]
        with pytest.raises(PermissionDenied):
            list(source(ctx(nobody), ""))
    finally:
        engine.close()
