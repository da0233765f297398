"""Lease, session and invitation lifetimes on an injected clock (no sleeping).

The engine reads time only from its ``Clock``; these tests move a
``FakeClock`` and check each TTL at and around its boundary. The wiring of
the resulting errors through a real room (HTTP status, ``ce`` exit status)
is checked once end to end in ``tests/e2e/test_foundation_errors.py``.
"""

from __future__ import annotations

import pytest

from commonroom.engine import OPERATOR
from commonroom.errors import InvalidRequest, InvitationExpired, LeaseConflict, SessionExpired
from tests.fakeclock import FakeClock, join

TEXT = "# Plan\n\n## Goals\n\n- ship\n\n## Open questions\n\n1. none\n"
GOALS = {"heading": ["Goals"]}



def event_types(engine, kind):
    return [e["payload"] for e in engine.history(OPERATOR, limit=200)["events"] if e["type"] == kind]


# ---------------------------------------------------------------- leases


def test_a_lease_expires_at_its_ttl_and_frees_the_region(engine, clock):
    alice, _ = join(engine, "alice")
    bob, _ = join(engine, "bob")
    mine = engine.acquire_lease(alice, GOALS, ttl_seconds=30)
    with pytest.raises(LeaseConflict):
        engine.acquire_lease(bob, GOALS)

    clock.advance(29.999999)
    assert [lease["id"] for lease in engine.leases(bob)["leases"]] == [mine["id"]]
    with pytest.raises(LeaseConflict):
        engine.write(bob, 1, "## Goals\n\n- bob's\n\n", GOALS)

    clock.advance(0.000001)  # exactly expires_at: no longer live
    assert engine.leases(bob)["leases"] == []
    theirs = engine.acquire_lease(bob, GOALS, ttl_seconds=30)
    assert [p["lease_id"] for p in event_types(engine, "lease.expired")] == [mine["id"]]
    # bob's write over Goals is no longer blocked by alice's dead lease
    assert engine.write(bob, 1, "## Goals\n\n- bob's\n\n", GOALS)["number"] == 2
    assert engine.leases(OPERATOR)["leases"][0]["id"] == theirs["id"]


def test_renewing_moves_the_end_and_an_expired_lease_cannot_be_renewed(engine, clock):
    alice, _ = join(engine, "alice")
    lease = engine.acquire_lease(alice, GOALS, ttl_seconds=10)
    clock.advance(8)
    renewed = engine.renew_lease(alice, lease["id"], ttl_seconds=10)
    assert renewed["expires_at"] == clock.after(10)
    clock.advance(9)
    assert engine.leases(alice)["leases"][0]["status"] == "active"
    clock.advance(1)
    assert engine.leases(alice)["leases"] == []
    with pytest.raises(LeaseConflict) as refused:  # a transition the lease's state does not allow: 409
        engine.renew_lease(alice, lease["id"])
    assert refused.value.details["status"] == "expired" and refused.value.recovery == {"lease_id": lease["id"]}


def test_a_lease_dies_with_its_session(engine, clock):
    short, _ = join(engine, "short", session_ttl_seconds=60)
    other, _ = join(engine, "other")
    dead = engine.acquire_lease(short, GOALS, ttl_seconds=3600)
    clock.advance(60)
    assert engine.leases(other)["leases"] == []
    taken = engine.acquire_lease(other, GOALS)
    # the acquire that finds the dead lease marks it, in its own write, before its own event
    events = [(e["type"], e["payload"]["lease_id"]) for e in engine.history(OPERATOR, limit=200)["events"]
              if e["type"].startswith("lease.")]
    assert events[-2:] == [("lease.expired", dead["id"]), ("lease.acquired", taken["id"])]
    assert engine.acquire_lease(other, {"lines": [1, 1]})  # marked once: nothing left to sweep
    assert [p["lease_id"] for p in event_types(engine, "lease.expired")] == [dead["id"]]


# -------------------------------------------------------------- sessions


def test_a_session_expires_at_its_ttl(engine, clock):
    actor, joined = join(engine, "brief", ["read"], session_ttl_seconds=60)
    bearer = joined["token"]
    assert joined["session"]["expires_at"] == clock.after(60)
    clock.advance(59.999999)
    assert engine.authenticate(bearer).session_id == actor.session_id
    assert engine.session_live(actor.session_id)

    clock.advance(0.000001)
    with pytest.raises(SessionExpired) as expired:
        engine.authenticate(bearer)
    assert expired.value.details == {"session_id": actor.session_id, "expires_at": joined["session"]["expires_at"]}
    assert not engine.session_live(actor.session_id)


def test_expired_sessions_are_not_counted_live(engine, clock):
    join(engine, "brief", ["read"], session_ttl_seconds=60)
    join(engine, "long", ["read"], session_ttl_seconds=3600)
    assert engine.room_status(OPERATOR)["sessions"] == 2
    clock.advance(60)
    assert engine.room_status(OPERATOR)["sessions"] == 1
    by_name = {p["name"]: p for p in engine.participants(OPERATOR)["participants"]}
    assert (by_name["brief"]["sessions"], by_name["long"]["sessions"]) == (0, 1)
    revoked, _ = join(engine, "gone", ["read"], session_ttl_seconds=3600)
    assert engine.room_status(OPERATOR)["sessions"] == 2
    engine.revoke(session_id=revoked.session_id)
    status = engine.room_status(OPERATOR)
    assert (status["participants"], status["sessions"]) == (3, 1)  # a revoked session is not live either


# ----------------------------------------------------------- invitations


def test_an_invitation_expires_and_joining_it_changes_nothing(engine, clock):
    late = engine.invite("late", ["read"], expires_in_seconds=10)
    early = engine.invite("early", ["read"], expires_in_seconds=10)
    clock.advance(9.999999)
    engine.join(early["token"])  # still valid just before its end
    before = engine.history(OPERATOR, limit=200)["events"]

    clock.advance(0.000001)
    with pytest.raises(InvitationExpired) as expired:
        engine.join(late["token"])
    assert expired.value.details == {"invitation_id": late["invitation_id"], "expires_at": late["expires_at"]}
    assert late["expires_at"] == clock.stamp()
    # nothing was written: no participant, no session, no event
    assert [p["name"] for p in engine.participants(OPERATOR)["participants"]] == ["early"]
    assert engine.history(OPERATOR, limit=200)["events"] == before
    row = engine.store.models.Invitation.get_by_id(late["invitation_id"])
    assert (row.redeemed_at, row.session_id) == (None, None)
