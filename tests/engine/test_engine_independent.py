"""Two engines in one process are independent.

Each ``Store`` defines its own model classes bound to its own database, so
opening a second room in the same process never redirects the first one's
queries, and nothing one room writes shows up in the other.
"""

from __future__ import annotations

import threading

import pytest

from commonroom.engine import OPERATOR, Engine
from commonroom.errors import Unauthorized
from tests.fakeclock import FakeClock, join, open_engine

TEXT_A = "# A\n\nalpha\n"
TEXT_B = "# B\n\nbeta\n"


@pytest.fixture
def pair(tmp_path):
    published: dict[str, list] = {"a": [], "b": []}
    engines = {}
    for key, text in (("a", TEXT_A), ("b", TEXT_B)):
        document = tmp_path / key / "doc.md"
        document.parent.mkdir()
        document.write_text(text)
        engines[key] = Engine.open(document, clock=FakeClock(), publish=published[key].extend)
        engines[key].set_ingress({"host": "127.0.0.1", "port": 1})
    yield engines["a"], engines["b"], published
    for engine in engines.values():
        engine.close()


def test_each_store_has_its_own_models_bound_to_its_own_database(pair):
    a, b, _ = pair
    assert a.store.models.Version is not b.store.models.Version
    for model in a.store.models.all:
        assert model._meta.database is a.store.db
    for model in b.store.models.all:
        assert model._meta.database is b.store.db
    # the foreign key points at the sibling class of the same store
    assert a.store.models.Session.participant.rel_model is a.store.models.Participant


def test_the_first_engine_reads_its_own_sidecar_after_a_second_opens(pair):
    a, b, _ = pair
    a.write(OPERATOR, 1, "# A\n\nalpha 2\n")
    a.write(OPERATOR, 2, "# A\n\nalpha 3\n")
    # opened after a, and written after a: a's queries must still go to a's file
    b.write(OPERATOR, 1, "# B\n\nbeta 2\n")
    assert [v["number"] for v in a.versions(OPERATOR)["versions"]] == [3, 2, 1]
    assert [v["number"] for v in b.versions(OPERATOR)["versions"]] == [2, 1]
    assert a.version(OPERATOR, 1)["text"] == TEXT_A
    assert b.version(OPERATOR, 1)["text"] == TEXT_B
    assert a.document(OPERATOR)["text"] == "# A\n\nalpha 3\n"
    assert (a.document_path.read_text(), b.document_path.read_text()) == ("# A\n\nalpha 3\n", "# B\n\nbeta 2\n")


def test_participants_sessions_events_and_publishing_stay_in_their_room(pair):
    a, b, published = pair
    assert a.workspace_id != b.workspace_id
    alice, _ = join(a, "alice")
    assert b.participants(OPERATOR)["participants"] == []
    assert [p["name"] for p in a.participants(OPERATOR)["participants"]] == ["alice"]
    # a bearer of room a means nothing to room b
    token_a = a.invite("bob", ["read"])["token"]
    with pytest.raises(Unauthorized):
        b.join(token_a)
    assert a.room_status(alice)["participants"] == 1 and b.room_status(OPERATOR)["participants"] == 0

    types_a = [e["type"] for e in a.history(OPERATOR, limit=200)["events"]]
    types_b = [e["type"] for e in b.history(OPERATOR, limit=200)["events"]]
    assert "session.opened" in types_a and "session.opened" not in types_b
    # each store published exactly what it committed, to its own subscriber
    assert [e["type"] for e in published["a"]] == types_a
    assert [e["type"] for e in published["b"]] == types_b


def test_leases_in_one_room_do_not_block_the_other(pair):
    a, b, _ = pair
    holder, _ = join(a, "holder")
    other, _ = join(b, "holder")  # same name, another room
    a.acquire_lease(holder, {"lines": [1, 3]})
    assert b.leases(OPERATOR)["leases"] == []
    b.acquire_lease(other, {"lines": [1, 3]})
    assert len(a.leases(OPERATOR)["leases"]) == 1 and len(b.leases(OPERATOR)["leases"]) == 1


def test_closing_one_engine_leaves_the_other_working(pair):
    a, b, _ = pair
    b.write(OPERATOR, 1, "# B\n\nbeta 2\n")
    b.close()  # the engine opened last
    assert a.write(OPERATOR, 1, "# A\n\nafter b closed\n")["number"] == 2
    assert [v["number"] for v in a.versions(OPERATOR)["versions"]] == [2, 1]
    assert b.store.db.is_closed()


def test_two_engines_commit_from_two_threads_at_once(pair):
    a, b, _ = pair
    rounds = {"A": 40, "B": 25}
    failures: list[BaseException] = []
    start = threading.Barrier(2)

    def run(engine: Engine, letter: str) -> None:
        try:
            start.wait()
            for n in range(1, rounds[letter] + 1):
                engine.write(OPERATOR, n, f"# {letter}\n\n{letter} {n}\n", summary=f"{letter}{n}")
        except BaseException as exc:  # noqa: BLE001 - reported below
            failures.append(exc)

    threads = [threading.Thread(target=run, args=(a, "A")), threading.Thread(target=run, args=(b, "B"))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not failures, failures
    for engine, letter in ((a, "A"), (b, "B")):
        count = rounds[letter]
        assert engine.document(OPERATOR)["text"] == f"# {letter}\n\n{letter} {count}\n"
        listed = engine.versions(OPERATOR, limit=200)["versions"]
        assert [v["number"] for v in listed] == list(range(count + 1, 0, -1))
        assert [v["summary"] for v in listed[:-1]] == [f"{letter}{n}" for n in range(count, 0, -1)]


def test_reopening_a_room_in_the_same_process_sees_what_was_committed(tmp_path):
    first = open_engine(tmp_path / "r", TEXT_A)
    first.write(OPERATOR, 1, "# A\n\nkept\n")
    other = open_engine(tmp_path / "s", TEXT_B)
    first.close()
    again = Engine.open(tmp_path / "r" / "doc.md", clock=FakeClock())
    try:
        assert again.document(OPERATOR) == {"text": "# A\n\nkept\n", "version": 2,
                                            "content_hash": again.head().hash}
        assert again.workspace_id == first.workspace_id
        # the engine opened before it still reads its own sidecar
        assert [v["number"] for v in other.versions(OPERATOR)["versions"]] == [1]
        assert other.participants(OPERATOR)["participants"] == []
        join(again, "late")
        assert other.room_status(OPERATOR)["participants"] == 0
    finally:
        again.close()
        other.close()
