"""One participant per name, up to case and width, in process.

A participant is identified by ``participant_key`` (NFKC, case-folded) and
shown by the name first given; an invitation for any equivalent name adds a
session to it. The sidecar migration from schema version 1 (no keys) keeps
every row and event, and keys apart two participants that already shared a
key there.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from commonroom.engine import OPERATOR, Engine
from commonroom.errors import InvalidRequest
from commonroom.store import db as store_db
from commonroom.store.models import DUPLICATE_KEY_SEPARATOR, participant_key
from tests.fakeclock import ALL, FakeClock, join, open_engine

TEXT = "# Plan\n\n## Goals\n\n- ship\n"
SPELLINGS = ["Ana", "ana", "ANA", "ａｎａ", " Ａna "]


@pytest.fixture
def engine(tmp_path):
    engine = open_engine(tmp_path, TEXT, clock=FakeClock())
    yield engine
    engine.close()


def names(engine: Engine) -> list[tuple[str, int]]:
    page = engine.participants(OPERATOR, 200)
    return [(p["name"], p["sessions"]) for p in page["participants"]]


def events(engine: Engine, kind: str) -> list[dict]:
    return [e["payload"] for e in engine.history(OPERATOR, limit=200)["events"] if e["type"] == kind]


def test_the_key_folds_case_and_width():
    assert {participant_key(s.strip()) for s in SPELLINGS} == {"ana"}
    assert participant_key("Straße") == participant_key("STRASSE") == "strasse"
    assert participant_key("ﬁle") == "file"  # a compatibility ligature
    assert participant_key("Å") == participant_key("Å")  # combining ring vs precomposed
    assert participant_key("bob") != participant_key("bób")  # accents are not folded away
    for name in ("Ana", "ǅ", "ﬀ", "ΐ", "ᾈ", "Ⅻ", "㎒"):
        key = participant_key(name)
        assert participant_key(key) == key  # stable


def test_equivalent_names_are_one_participant_shown_by_the_first(engine):
    actors = []
    for spelling in SPELLINGS:
        actor, joined = join(engine, spelling)
        actors.append(actor)
        assert joined["session"]["participant"]["name"] == "Ana"
    assert len({a.participant_id for a in actors}) == 1
    assert len({a.session_id for a in actors}) == len(SPELLINGS)
    assert names(engine) == [("Ana", len(SPELLINGS))]
    assert engine.room_status(OPERATOR)["participants"] == 1
    assert [p["participant"]["name"] for p in events(engine, "participant.joined")] == ["Ana"]
    assert len(events(engine, "session.opened")) == len(SPELLINGS)
    # Each session acts as Ana: a lease of one is shown as Ana's.
    lease = engine.acquire_lease(actors[3], {"heading": ["Goals"]})
    assert lease["participant"] == "Ana"
    # A different name stays a different participant.
    join(engine, "Anna")
    assert sorted(names(engine)) == [("Ana", len(SPELLINGS)), ("Anna", 1)]


def test_the_invitation_answer_names_the_participant(engine):
    first = engine.invite("Ana", ALL)
    assert first["participant"] == "Ana"
    # Not joined yet: a later equivalent invitation is shown by the name first given…
    second = engine.invite("ＡＮＡ", ALL)
    assert second["participant"] == "Ana"
    assert [p["participant"] for p in events(engine, "invitation.created")] == ["Ana", "Ana"]
    # …and whichever is redeemed first creates the participant under that name.
    assert engine.join(second["token"])["session"]["participant"]["name"] == "Ana"
    assert engine.join(first["token"])["session"]["participant"]["name"] == "Ana"
    assert names(engine) == [("Ana", 2)]


def test_a_revoked_first_invitation_does_not_name_the_participant(engine):
    wrong = engine.invite("ANA", ALL)
    engine.revoke(invitation_ref=wrong["invitation_id"])
    right = engine.invite("Ana", ALL)
    assert right["participant"] == "Ana"
    engine.join(right["token"])
    assert names(engine) == [("Ana", 1)]


def test_revoking_one_session_keeps_the_others(engine):
    a, _ = join(engine, "Ana")
    b, _ = join(engine, "ana")
    engine.revoke(session_id=a.session_id)
    assert names(engine) == [("Ana", 1)]
    assert engine.session_live(b.session_id) and not engine.session_live(a.session_id)


# ---------------------------------------------------------------- migration

#: The participant and invitation tables as schema version 1 created them.
V1_PARTICIPANT = ('CREATE TABLE "participant" ("id" TEXT NOT NULL PRIMARY KEY, "name" TEXT NOT NULL, '
                  '"created_at" TEXT NOT NULL)')
V1_INVITATION = ('CREATE TABLE "invitation" ("id" TEXT NOT NULL PRIMARY KEY, "secret_hash" TEXT NOT NULL, '
                 '"participant_name" TEXT NOT NULL, "capabilities" TEXT NOT NULL, "transport" TEXT NOT NULL, '
                 '"session_ttl_seconds" INTEGER NOT NULL, "created_at" TEXT NOT NULL, "expires_at" TEXT NOT NULL, '
                 '"redeemed_at" TEXT, "revoked_at" TEXT, "session_id" TEXT)')


def make_v1_sidecar(folder: Path) -> tuple[Path, dict]:
    """A room written by schema version 1 with Ana and ana (two participants), bob, and history.

    The room is made by today's code, then taken back to version 1's layout
    by hand: the two tables rebuilt without their key columns, the key
    indexes dropped, ``schema_version`` 1, and a second participant ``ana``
    (which version 1 allowed) with a session of its own.
    """
    engine = open_engine(folder, TEXT, clock=FakeClock())
    ana, ana_joined = join(engine, "Ana")
    bob, _ = join(engine, "bob", ["read", "propose"])
    engine.write(ana, 1, TEXT + "\nmore\n", summary="by Ana")
    pending = engine.invite("ANA", ALL)  # not redeemed before the upgrade
    path = engine.store.path
    engine.close()

    con = sqlite3.connect(path)
    with con:
        con.execute("PRAGMA foreign_keys = OFF")
        for table, create in (("participant", V1_PARTICIPANT), ("invitation", V1_INVITATION)):
            columns = [r[1] for r in con.execute(f'PRAGMA table_info("{table}")')
                       if r[1] not in ("name_key", "participant_key")]
            listed = ", ".join(f'"{c}"' for c in columns)
            con.execute(create.replace(f'"{table}"', f'"{table}_v1"', 1))
            con.execute(f'INSERT INTO "{table}_v1" ({listed}) SELECT {listed} FROM "{table}"')
            con.execute(f'DROP TABLE "{table}"')
            con.execute(f'ALTER TABLE "{table}_v1" RENAME TO "{table}"')
        con.execute('CREATE UNIQUE INDEX "participant_name" ON "participant" ("name")')
        con.execute('CREATE UNIQUE INDEX "invitation_secret_hash" ON "invitation" ("secret_hash")')
        # Version 1 let a second participant differ from Ana by case only.
        con.execute("INSERT INTO participant VALUES ('p_zzlater', 'ana', '2026-11-29T09:00:00.000000+00:00')")
        con.execute("INSERT INTO session (id, token_hash, participant_id, invitation_id, capabilities, client, "
                    "created_at, expires_at, revoked_at) VALUES ('s_later', 'h_later', 'p_zzlater', 'inv_x', "
                    "'[\"read\"]', NULL, '2026-11-29T09:00:00.000000+00:00', '2099-01-01T00:00:00.000000+00:00', NULL)")
        con.execute("UPDATE meta SET value = '1' WHERE key = 'schema_version'")
    before = {
        "events": con.execute("SELECT id, type, payload FROM event ORDER BY id").fetchall(),
        "versions": con.execute("SELECT number, content_hash FROM version ORDER BY number").fetchall(),
        "sessions": con.execute("SELECT id, participant_id FROM session ORDER BY id").fetchall(),
        "participants": con.execute("SELECT id, name, created_at FROM participant ORDER BY id").fetchall(),
        "ana": ana, "ana_bearer": ana_joined["token"], "pending": pending,
    }
    assert "name_key" not in [r[1] for r in con.execute('PRAGMA table_info("participant")')]
    con.close()
    return path, before


def test_a_version_1_sidecar_opens_keeps_its_history_and_keys_duplicates_apart(tmp_path):
    path, before = make_v1_sidecar(tmp_path)
    engine = Engine.open(tmp_path / "doc.md", clock=FakeClock())
    try:
        assert engine.store.meta("schema_version") == str(store_db.SCHEMA_VERSION)
        con = sqlite3.connect(path)
        assert con.execute("SELECT id, type, payload FROM event ORDER BY id").fetchall() == before["events"]
        assert con.execute("SELECT number, content_hash FROM version ORDER BY number").fetchall() == before["versions"]
        assert con.execute("SELECT id, participant_id FROM session ORDER BY id").fetchall() == before["sessions"]
        assert con.execute("SELECT id, name, created_at FROM participant ORDER BY id").fetchall() == before["participants"]
        keys = dict(con.execute("SELECT name, name_key FROM participant"))
        assert keys["Ana"] == "ana" and keys["bob"] == "bob"
        assert keys["ana"] == "ana" + DUPLICATE_KEY_SEPARATOR + "p_zzlater"
        indexes = {r[1]: r[2] for r in con.execute("PRAGMA index_list('participant')")}
        assert indexes["participant_name_key"] == 1  # unique
        assert dict(con.execute("SELECT participant_name, participant_key FROM invitation"))["ANA"] == "ana"
        con.close()
        # Old sessions still authenticate; history reads as before.
        actor = engine.authenticate(before["ana_bearer"])
        assert (actor.participant_id, actor.participant_name) == (before["ana"].participant_id, "Ana")
        assert engine.version(OPERATOR, 2)["summary"] == "by Ana"
        # Both old participants stay listed; new invitations for any spelling go to the earliest.
        assert sorted(n for n, _ in names(engine)) == ["Ana", "ana", "bob"]
        joined = engine.join(before["pending"]["token"])  # invited as ANA before the upgrade
        assert joined["session"]["participant"]["name"] == "Ana"
        _, again = join(engine, "ａｎａ")
        assert again["session"]["participant"]["id"] == joined["session"]["participant"]["id"]
        assert len(names(engine)) == 3
    finally:
        engine.close()
    # Opening again is a no-op (already current), read-only opens too.
    Engine.open(tmp_path / "doc.md", clock=FakeClock()).close()
    readonly = Engine.open(tmp_path / "doc.md", clock=FakeClock(), readonly=True)
    assert len(readonly.participants(OPERATOR, 200)["participants"]) == 3
    readonly.close()


def test_a_read_only_open_leaves_a_version_1_sidecar_as_it_is(tmp_path):
    _, before = make_v1_sidecar(tmp_path)
    sidecar = tmp_path / "doc.md.commonroom.db"
    with pytest.raises(InvalidRequest, match="schema version 1, older") as refused:
        Engine.open(tmp_path / "doc.md", clock=FakeClock(), readonly=True)
    assert refused.value.details["schema_version"] == 1
    con = sqlite3.connect(sidecar)
    assert con.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone() == ("1",)
    con.close()


def test_a_newer_sidecar_is_refused(tmp_path):
    engine = open_engine(tmp_path, TEXT, clock=FakeClock())
    path = engine.store.path
    engine.close()
    con = sqlite3.connect(path)
    with con:
        con.execute("UPDATE meta SET value = '99' WHERE key = 'schema_version'")
    con.close()
    for readonly in (False, True):
        with pytest.raises(RuntimeError, match="schema version 99"):
            Engine.open(tmp_path / "doc.md", clock=FakeClock(), readonly=readonly)
