"""Leases follow their text through commits (engine on a real sidecar)."""

from __future__ import annotations

import pytest

from commonroom.engine import OPERATOR, Engine
from commonroom.errors import LeaseConflict

DOC = "".join(f"line {i}\n" for i in range(1, 21))


@pytest.fixture
def room(tmp_path):
    doc = tmp_path / "doc.md"
    doc.write_text(DOC)
    engine = Engine.open(doc)
    engine.set_ingress({"host": "127.0.0.1", "port": 1})

    def join(name):
        token = engine.invite(name, ["read", "lease", "write", "propose", "approve"])["token"]
        return engine.authenticate(engine.join(token)["token"])

    yield engine, join("holder"), join("writer")
    engine.close()


def lines_of_lease(engine, lease_id):
    return next(item["lines"] for item in engine.leases(OPERATOR)["leases"] if item["id"] == lease_id)


def test_insert_above_moves_the_lease_down(room):
    engine, holder, writer = room
    lease = engine.acquire_lease(holder, {"lines": [10, 12]})
    engine.write(writer, 1, "new a\nnew b\nnew c\n", {"lines": [1, 0]}, "insert at top")
    assert lines_of_lease(engine, lease["id"]) == [13, 15]
    # the leased text is still what the lease covers
    assert engine.document(holder, {"lines": [13, 15]})["text"] == "line 10\nline 11\nline 12\n"
    # lines 10..12 are now someone else's text: writable
    engine.write(writer, 2, "free\n", {"lines": [10, 10]})
    with pytest.raises(LeaseConflict):
        engine.write(writer, 3, "taken\n", {"lines": [14, 14]})


def test_delete_above_moves_the_lease_up_and_edits_below_leave_it(room):
    engine, holder, writer = room
    lease = engine.acquire_lease(holder, {"lines": [10, 12]})
    engine.write(writer, 1, "", {"lines": [2, 4]}, "delete three lines")
    assert lines_of_lease(engine, lease["id"]) == [7, 9]
    engine.write(writer, 2, "tail\n", {"lines": [15, 15]})
    assert lines_of_lease(engine, lease["id"]) == [7, 9]


def test_the_holder_editing_inside_grows_the_lease(room):
    engine, holder, writer = room
    holder_writes = engine.acquire_lease(holder, {"lines": [10, 12]})
    engine.write(holder, 1, "a\nb\nc\nd\ne\n", {"lines": [11, 11]}, "grow")
    assert lines_of_lease(engine, holder_writes["id"]) == [10, 16]
    with pytest.raises(LeaseConflict):
        engine.write(writer, 2, "x\n", {"lines": [16, 16]})
    engine.write(writer, 2, "x\n", {"lines": [17, 17]})


def test_a_heading_lease_follows_its_section_without_reparsing(tmp_path):
    doc = tmp_path / "doc.md"
    doc.write_text("# A\n\ntext\n\n## B\n\nb text\n\n## C\n\nc text\n")
    engine = Engine.open(doc)
    engine.set_ingress({"host": "127.0.0.1", "port": 1})
    holder = engine.authenticate(engine.join(engine.invite("h", ["read", "lease"])["token"])["token"])
    writer = engine.authenticate(engine.join(engine.invite("w", ["read", "write"])["token"])["token"])
    lease = engine.acquire_lease(holder, {"heading": ["B"]})
    assert lease["lines"] == [5, 8]
    engine.write(writer, 1, "more\nintro\n", {"lines": [3, 3]})
    assert lines_of_lease(engine, lease["id"]) == [6, 9]
    assert engine.document(holder, {"heading": ["B"]})["lines"] == [6, 9]
    engine.close()


def test_an_acquire_conflicts_exactly_where_a_live_lease_overlaps(room):
    """SQLite hands the acquire only the leases near its lines; the answer is still exact.

    Every span of the document (insertion points included) is tried against
    live leases of another session: lines, one line, an insertion point, the
    last lines. It conflicts exactly when ``regions.overlaps`` says a lease
    overlaps it, naming that lease, and the holder's own leases never count.
    """
    from commonroom import regions

    engine, holder, writer = room
    held = [engine.acquire_lease(holder, {"lines": lines}) for lines in ([3, 5], [8, 7], [10, 10], [19, 20])]
    spans = {lease["id"]: regions.Span(*lease["lines"]) for lease in held}
    assert spans[held[1]["id"]].empty
    for start in range(1, 22):
        for end in range(start - 1, 21):
            probe = regions.Span(start, end)
            expected = {lid for lid, span in spans.items() if regions.overlaps(span, probe)}
            try:
                lease = engine.acquire_lease(writer, {"lines": [start, end]})
            except LeaseConflict as conflict:
                assert expected, (start, end)
                assert conflict.to_dict()["lease_id"] in expected, (start, end)
            else:
                assert not expected, (start, end)
                engine.release_lease(writer, lease["id"])
            own = engine.acquire_lease(holder, {"lines": [start, end]})  # the holder's leases never block it
            engine.release_lease(holder, own["id"])


def test_a_heading_lease_is_labelled_with_its_heading_as_it_is_now(tmp_path):
    """Renaming the leased heading, or its parent, changes the lease's label, not its lines."""
    doc = tmp_path / "doc.md"
    doc.write_text("# A\n\ntext\n\n## B\n\nb text\n\n## C\n\nc text\n")
    engine = Engine.open(doc)
    engine.set_ingress({"host": "127.0.0.1", "port": 1})
    holder = engine.authenticate(engine.join(engine.invite("h", ["read", "lease", "write"])["token"])["token"])
    lease = engine.acquire_lease(holder, {"heading": ["B"]})
    assert lease["region"] == {"heading": ["A", "B"]} and lease["lines"] == [5, 8]
    engine.write(holder, 1, "## B, renamed\n", {"lines": [5, 5]})
    shown = engine.leases(OPERATOR)["leases"][0]
    assert shown["region"] == {"heading": ["A", "B, renamed"]} and shown["lines"] == [5, 8]
    engine.write(holder, 2, "# Top\n", {"lines": [1, 1]})
    assert engine.leases(OPERATOR)["leases"][0]["region"] == {"heading": ["Top", "B, renamed"]}
    renewed = engine.renew_lease(holder, lease["id"])
    assert renewed["region"] == {"heading": ["Top", "B, renamed"]}
    engine.close()
