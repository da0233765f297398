"""What the board engine tests share: the coordinator/worker fixture and small helpers."""

from __future__ import annotations

import asyncio

import pytest

from tests.fakeclock import join

CAPS = ["read", "observe", "message"]


@pytest.fixture
def room(engine):
    """Coordinator C and worker W (another participant), plus W's second session W2."""
    c, cj = join(engine, "coordinator", CAPS)
    w, wj = join(engine, "worker", CAPS)
    w2, _ = join(engine, "worker", CAPS)
    return engine, c, w, w2


def observe(engine, actor, session_id, token=None, **kw):
    """``observe_session_messages`` run to its end."""
    return asyncio.run(engine.observe_session_messages(actor, session_id, token, **kw))


def post_todo(engine, c, body="implement X; answer with the commit"):
    """A todo on C's own board."""
    return engine.post_session_message(c, c.session_id, "todo", body, tags=["work"])
