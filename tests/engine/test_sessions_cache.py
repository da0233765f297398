"""The session cache behind ``authenticate`` is exact (commonroom/engine/sessions_cache.py).

A bearer that authenticated once is answered from memory; every write that
changes a session, a participant or an invitation empties the cache before
it is acknowledged; a lookup that read the sidecar before such a write
cannot keep its (old) answer; expiry is still checked on every request.
"""

from __future__ import annotations

import threading

import pytest

from commonroom import tokens
from commonroom.engine import OPERATOR
from commonroom.errors import NotFound, SessionExpired, Unauthorized
from commonroom.engine.sessions_cache import SessionCache
from tests.fakeclock import join


def test_a_session_is_read_once_then_kept(engine):
    actor, joined = join(engine, "alice", ["read"])
    engine.session_cache.clear()
    assert len(engine.session_cache) == 0
    first = engine.authenticate(joined["token"])
    assert len(engine.session_cache) == 1
    engine.store.db.execute_sql('UPDATE "participant" SET "name" = ? WHERE "id" = ?', ("mallory", actor.participant_id))
    # kept: the row is not read again (an update without its event is not a room write)
    assert engine.authenticate(joined["token"]) is first
    assert engine.session_cache.get(tokens.digest(joined["token"]))[0] is first


def test_revoking_a_session_refuses_its_bearer_at_once(engine):
    actor, joined = join(engine, "alice", ["read"])
    assert engine.authenticate(joined["token"]).session_id == actor.session_id  # now cached
    assert engine.revoke(session_id=actor.session_id)["revoked"] is True
    with pytest.raises(Unauthorized) as refused:
        engine.authenticate(joined["token"])
    assert refused.value.details["reason"] == "revoked"


def test_revoking_inside_a_group_commit_empties_the_cache_after_its_commit(engine):
    actor, joined = join(engine, "alice", ["read"])
    engine.authenticate(joined["token"])
    with engine.store.batch():
        engine.revoke(session_id=actor.session_id)
        assert len(engine.session_cache) == 1  # not committed yet: other readers still see the old row
    assert len(engine.session_cache) == 0
    with pytest.raises(Unauthorized):
        engine.authenticate(joined["token"])


def test_a_refused_write_leaves_the_cache_alone(engine):
    _, joined = join(engine, "alice", ["read"])
    engine.authenticate(joined["token"])
    with pytest.raises(NotFound):
        engine.revoke(session_id="s_missing")  # rolled back: no event, nothing changed
    with pytest.raises(Unauthorized):
        engine.authenticate("cr_s_not_a_token")  # unknown bearers are not kept
    assert len(engine.session_cache) == 1


@pytest.mark.parametrize("kind", ["join", "invitation"])
def test_other_access_writes_empty_the_cache(engine, kind):
    _, joined = join(engine, "alice", ["read"])
    engine.authenticate(joined["token"])
    generation = engine.session_cache.generation
    if kind == "join":
        join(engine, "bob", ["read"])
    else:
        invited = engine.invite("carol", ["read"])
        engine.revoke(invitation_ref=invited["invitation_id"])
    assert engine.session_cache.generation > generation
    assert engine.session_cache.get(tokens.digest(joined["token"])) is None


def test_writes_that_touch_no_session_keep_it(engine):
    actor, joined = join(engine, "alice", ["read", "lease"])
    engine.authenticate(joined["token"])
    lease = engine.acquire_lease(actor, {"heading": ["Plan"]}, 60)
    engine.release_lease(actor, lease["id"])
    assert len(engine.session_cache) == 1


def test_an_answer_read_before_a_revocation_is_not_kept(engine):
    cache = SessionCache()
    generation = cache.generation
    cache.clear()  # a watched write committed while the lookup was reading the row
    cache.put("d", generation, OPERATOR, None)  # type: ignore[arg-type]
    assert cache.get("d") is None
    cache.put("d", cache.generation, OPERATOR, None)  # type: ignore[arg-type]
    assert cache.get("d") is not None


def test_a_cached_session_still_expires_on_time(engine, clock):
    actor, joined = join(engine, "brief", ["read"], session_ttl_seconds=60)
    engine.authenticate(joined["token"])
    clock.advance(60)
    with pytest.raises(SessionExpired) as expired:
        engine.authenticate(joined["token"])
    assert expired.value.details == {"session_id": actor.session_id, "expires_at": joined["session"]["expires_at"]}


def test_a_full_cache_starts_over():
    cache = SessionCache(limit=2)
    for key in "abc":
        cache.put(key, cache.generation, OPERATOR, None)  # type: ignore[arg-type]
    assert len(cache) == 1 and cache.get("c") is not None


def test_a_revocation_racing_lookups_never_leaves_a_revoked_bearer_admitted(engine):
    """Lookups on another thread while the session is revoked: after the revoke returns, none admits it."""
    actor, joined = join(engine, "alice", ["read"])
    stop = threading.Event()

    def hammer() -> None:
        while not stop.is_set():
            try:
                engine.authenticate(joined["token"])
            except Unauthorized:
                pass

    thread = threading.Thread(target=hammer)
    thread.start()
    try:
        engine.revoke(session_id=actor.session_id)
        for _ in range(200):
            with pytest.raises(Unauthorized):
                engine.authenticate(joined["token"])
    finally:
        stop.set()
        thread.join()
