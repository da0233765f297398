"""Rows read by SQL text (``commonroom.store.rows``) are the rows peewee's query builder reads.

The polled reads (a session, the lists of handoffs, proposals, board
messages, participants, the event history) read through ``select_rows``
instead of the builder (docs/performance.md, *Polled reads skip the
query builder*). Every model of a populated sidecar is read both ways here and
must come back the same: every column converted by its field (JSON
decoded, booleans as booleans), a foreign key still loading lazily, and
the pages' filters and cursors finding the rows the builder found.
"""

from __future__ import annotations

import peewee as pw
import pytest

from commonroom.engine import OPERATOR
from commonroom.store.rows import first_row, select_rows, where_sql
from tests.fakeclock import join, open_engine


@pytest.fixture
def engine(tmp_path):
    engine = open_engine(tmp_path, "# Plan\n\none\ntwo\nthree\n")
    lead, _ = join(engine, "lead", ["read", "propose", "approve", "lease", "handoff", "message"])
    worker, _ = join(engine, "worker", ["read", "propose", "handoff", "message"])
    for i in range(6):  # a second apart: the lists' order (created_at, id) is not the ids' own order
        engine.clock.advance(1)
        engine.create_proposal(worker if i % 2 else lead, engine.head().number, {"lines": [3, 3]}, f"v{i}\n", f"p{i}")
        handoff = engine.create_handoff(lead, f"part {i}", artifacts=[{"path": "README.md"}],
                                        assignee="worker" if i % 2 else None)["handoff"]
    engine.cancel_handoff(lead, handoff["id"])  # the last one: the lists filter by status
    engine.reject_proposal(lead, engine.proposals(lead)["proposals"][1]["id"])
    engine.post_session_message(lead, worker.session_id, "todo", "do it", tags=["work"], requires_ack=True)
    engine.post_session_message(lead, worker.session_id, "note", "fyi")
    other, _ = join(engine, "lead", ["read", "message"])  # a second session of lead: its peer
    engine.post_peer_message(lead, engine.peer_id_of(other.session_id), "note", "over here", tags=["x"])
    lease = engine.acquire_lease(lead, {"lines": [1, 1]}, 60)
    engine.release_lease(lead, lease["id"])
    engine.write(OPERATOR, engine.head().number, "# Plan\n\nzero\n", None, "rewrite")
    yield engine
    engine.close()


def test_every_model_reads_as_the_builder_reads_it(engine):
    seen = 0
    for name in dir(engine.store.models):
        model = getattr(engine.store.models, name)
        if not (isinstance(model, type) and issubclass(model, pw.Model)):
            continue
        built = list(model.select().order_by(*model._meta.sorted_fields))
        order = ", ".join(f'"{f.column_name}"' for f in model._meta.sorted_fields)
        read = select_rows(model, f"ORDER BY {order}")
        assert [r.__data__ for r in read] == [r.__data__ for r in built], model.__name__
        assert all(type(r) is model and not r._dirty for r in read)
        seen += len(read)
    assert seen > 20  # the fixture filled the tables this test compares


def test_columns_are_converted_and_a_foreign_key_loads(engine):
    Session, Message = engine.store.models.Session, engine.store.models.BoardMessage
    session = first_row(Session, 'WHERE "id" = (SELECT MIN("id") FROM "session")')
    assert isinstance(session.capabilities, list) and session.capabilities
    assert session.participant.name in ("lead", "worker")  # the lazy load through the foreign key
    todo = first_row(Message, 'WHERE "kind" = ?', ("todo",))
    assert todo.tags == ["work"] and todo.requires_ack is True
    assert first_row(Message, 'WHERE "kind" = ?', ("none such",)) is None


def test_the_pages_find_what_the_builder_finds(engine):
    actor, _ = join(engine, "reader", ["read"])
    Proposal, Handoff = engine.store.models.Proposal, engine.store.models.Handoff
    for status in (None, "open", "rejected"):
        page = engine.proposals(actor, status=status, limit=1)
        query = Proposal.select() if status is None else Proposal.select().where(Proposal.status == status)
        expected = [p.id for p in query.order_by(Proposal.created_at, Proposal.id)]
        ids = [p["id"] for p in page["proposals"]]
        while page["next_cursor"]:
            page = engine.proposals(actor, status=status, limit=1, cursor=page["next_cursor"])
            ids += [p["id"] for p in page["proposals"]]
        assert ids == expected and len(ids) == {None: 6, "open": 5, "rejected": 1}[status]
    page = engine.handoffs(actor, limit=4)
    ids = [h["id"] for h in page["handoffs"]]
    page = engine.handoffs(actor, limit=4, cursor=page["next_cursor"])
    ids += [h["id"] for h in page["handoffs"]]
    assert ids == [h.id for h in Handoff.select().order_by(Handoff.created_at, Handoff.id)] and len(ids) == 6
    assert [h["summary"] for h in engine.handoffs(actor, status="open")["handoffs"]] == [f"part {i}" for i in range(5)]
    Participant = engine.store.models.Participant
    listed = engine.participants(actor)["participants"]
    in_order = Participant.select().order_by(Participant.created_at, Participant.id)
    assert [(p["name"], p["sessions"]) for p in listed] == [(p.name, 2 if p.name == "lead" else 1) for p in in_order]
    assert len(listed) == 3


def test_where_sql_joins_the_conditions_given():
    assert where_sql([]) == where_sql(["", ""]) == ""
    assert where_sql(['"a" = ?', "", '"b" > ?']) == 'WHERE "a" = ? AND "b" > ? '


def test_the_peer_messages_a_session_lists(engine):
    a, _ = join(engine, "pat", ["read", "message"])
    b, _ = join(engine, "pat", ["read", "message"])  # the same participant: a's peer
    engine.post_peer_message(a, engine.peer_id_of(b.session_id), "note", "one", tags=["t"])
    engine.clock.advance(1)
    engine.post_peer_message(a, engine.peer_id_of(b.session_id), "note", "two", requires_ack=True)
    got = engine.list_session_peers(b)["messages"]
    assert [(m["body"], m["tags"], m["requires_ack"]) for m in got] == [("one", ["t"], False), ("two", [], True)]
    assert engine.list_session_peers(a)["messages"] == []


def test_a_list_of_versions_reads_only_their_info(engine):
    Version = engine.store.models.Version
    fields = ("number", "summary", "source")
    read = select_rows(Version, 'ORDER BY "number" DESC', only=fields)
    built = list(Version.select(Version.number, Version.summary, Version.source).order_by(Version.number.desc()))
    assert [r.__data__ for r in read] == [r.__data__ for r in built] and len(read) >= 2
    assert all(r.content is None and r.delta is None for r in read)  # the texts stay in the sidecar
    actor, _ = join(engine, "reader", ["read"])
    page, numbers = engine.versions(actor, limit=1), []
    while True:
        numbers += [v["number"] for v in page["versions"]]
        if not page["next_cursor"]:
            break
        page = engine.versions(actor, limit=1, cursor=page["next_cursor"])
    assert numbers == [r.number for r in built]


def test_a_handoffs_events_page_in_order(engine):
    actor, _ = join(engine, "reader", ["read"])
    handoff = engine.handoffs(actor, status="cancelled")["handoffs"][0]
    page = engine.handoff_events(actor, handoff["id"], limit=1)
    types = [e["type"] for e in page["events"]]
    page = engine.handoff_events(actor, handoff["id"], limit=5, cursor=page["next_cursor"])
    types += [e["type"] for e in page["events"]]
    HandoffEvent = engine.store.models.HandoffEvent
    built = HandoffEvent.select().where(HandoffEvent.handoff_id == handoff["id"]).order_by(HandoffEvent.event_id)
    assert types == [e.type for e in built] and len(types) == 2 and page["next_cursor"] is None


def _walk(page_of, key):
    """Every item of a paged list, page by page (two a page)."""
    page = page_of(None)
    items = list(page[key])
    while page["next_cursor"]:
        page = page_of(page["next_cursor"])
        items += page[key]
    return items


def test_pages_of_rows_made_in_one_instant_follow_their_ids(engine):
    """Rows with one ``created_at`` are ordered, and a cursor resumes, by id (the keyset's second branch)."""
    lead, _ = join(engine, "lead2", ["read", "propose", "handoff", "message"])
    other, _ = join(engine, "lead2", ["read", "message"])
    for i in range(5):  # no clock advance: one created_at for the five
        engine.create_proposal(lead, engine.head().number, {"lines": [1, 1]}, f"w{i}\n", f"same {i}")
        engine.create_handoff(lead, f"same {i}")
        engine.post_peer_message(lead, engine.peer_id_of(other.session_id), "note", f"peer {i}")
    engine.clock.advance(1)
    engine.create_handoff(lead, "later")
    models = engine.store.models
    P, H, Part = models.Proposal, models.Handoff, models.Participant
    assert [p["id"] for p in _walk(lambda c: engine.proposals(lead, limit=2, cursor=c), "proposals")] == [
        p.id for p in P.select().order_by(P.created_at, P.id)]
    assert [h["id"] for h in _walk(lambda c: engine.handoffs(lead, limit=2, cursor=c), "handoffs")] == [
        h.id for h in H.select().order_by(H.created_at, H.id)]
    assert [p["id"] for p in _walk(lambda c: engine.participants(lead, limit=2, cursor=c), "participants")] == [
        p.id for p in Part.select().order_by(Part.created_at, Part.id)]
    # peer messages of one instant keep the order they were posted in (rowid), not their ids' order
    assert [m["body"] for m in engine.list_session_peers(other)["messages"]] == [f"peer {i}" for i in range(5)]


def test_the_history_pages_every_event_once(engine):
    actor, _ = join(engine, "reader", ["read"])
    ids = [e["id"] for e in _walk(lambda c: engine.history(actor, limit=2, cursor=c), "events")]
    Event = engine.store.models.Event
    assert ids == [e.id for e in Event.select().order_by(Event.id)] and len(ids) > 10
    assert [e["id"] for e in engine.events_after(ids[4], limit=3)] == ids[5:8]


def test_the_operators_session_list_pages_the_live_sessions_with_their_participants(engine):
    """``sessions`` (the owner port's list): live sessions only, [created_at, id] order, each with its participant."""
    gone, _ = join(engine, "gone", ["read"])
    engine.revoke(session_id=gone.session_id)
    listed = _walk(lambda c: engine.sessions(OPERATOR, limit=2, cursor=c), "sessions")
    Session = engine.store.models.Session
    live = [s for s in Session.select().order_by(Session.created_at, Session.id) if s.revoked_at is None]
    assert [(s["session"]["id"], s["session"]["participant"]["name"]) for s in listed] == [
        (s.id, s.participant.name) for s in live]
    assert gone.session_id not in {s["session"]["id"] for s in listed} and len(listed) == 3
