"""Console login codes and cookies in the engine: single use, 60 s, digests only, survive a reopen."""

from __future__ import annotations

import pytest

from commonroom import tokens
from commonroom.engine import OPERATOR
from commonroom.errors import Unauthorized
from tests.fakeclock import join, open_engine


def test_a_code_works_once_within_sixty_seconds(engine, clock):
    code = engine.console_code()
    assert code["login_path"] == "/console/login?code=" + code["code"]
    cookie, max_age = engine.console_redeem(code["code"])
    assert engine.console_admits(cookie) and max_age == 24 * 3600
    with pytest.raises(Unauthorized):
        engine.console_redeem(code["code"])
    late = engine.console_code()
    clock.advance(61)
    with pytest.raises(Unauthorized):
        engine.console_redeem(late["code"])
    assert not engine.console_admits("crk_" + "x" * 43) and not engine.console_admits(None)
    assert not engine.console_admits(code["code"])  # a code is not a cookie
    clock.advance(24 * 3600)
    assert not engine.console_admits(cookie)


def test_only_digests_are_kept_and_a_cookie_survives_a_reopen(engine, tmp_path, clock):
    cookie, _ = engine.console_redeem(engine.console_code()["code"])
    stored = (engine.store.meta("console_cookies") or "") + (engine.store.meta("console_codes") or "")
    assert cookie not in stored and tokens.digest(cookie) in stored
    engine.close()
    again = open_engine(tmp_path, "# Plan\n", clock=clock)
    try:
        assert again.console_admits(cookie)
    finally:
        again.close()


def test_sessions_lists_live_sessions_with_their_board_facts(engine):
    _, joined = join(engine, "alice", ["read", "message"])
    sid = joined["session"]["id"]
    assert engine.sessions(OPERATOR)["sessions"][0]["last_activity_at"] is None
    engine.post_session_message(OPERATOR, sid, "todo", "do it")
    entry = engine.sessions(OPERATOR)["sessions"][0]
    assert entry["session"]["id"] == sid and entry["board_messages"] == 1 and entry["open_messages"] == 1
    assert entry["last_activity_at"] is not None
