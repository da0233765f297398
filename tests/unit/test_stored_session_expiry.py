"""``ce``'s reading of a stored session's ``expires_at`` (``commonroom.cli.sessions.live``): a session file
is the user's, and one edited by hand must not stop every command with a traceback."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from commonroom.cli.sessions import live


def stamp(delta: timedelta) -> str:
    return (datetime.now(timezone.utc) + delta).isoformat()


@pytest.mark.parametrize("expires_at,expected", [
    (stamp(timedelta(hours=1)), True),
    (stamp(-timedelta(hours=1)), False),
    (stamp(-timedelta(hours=1)).replace("+00:00", "Z"), False),
    ((datetime.now(timezone(timedelta(hours=5))) - timedelta(minutes=1)).isoformat(), False),
    ("2020-01-01T00:00:00", True),  # no offset: not judged here (the room answers for it)
    ("yesterday", True),
    (None, True),
    (17, True),
])
def test_a_stored_session_is_live_until_its_expiry(expires_at, expected):
    data = {"token": "crs_x"} if expires_at is None else {"token": "crs_x", "expires_at": expires_at}
    assert live(data) is expected
