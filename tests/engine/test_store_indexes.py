"""No statement of the write path scans a table that grows with history (sidecar schema 6).

A room that has run for a while holds thousands of released leases,
decided proposals and versions; a write must not read them all. The test
records every statement SQLite runs for one round of writes (through the
connection's trace callback, so it sees what the engine really sends) and
asks SQLite's planner how each would run.
"""

from __future__ import annotations

import sqlite3

import pytest

from commonroom.engine import OPERATOR, Engine
from commonroom.store import SCHEMA_VERSION
from tests.fakeclock import FakeClock, join, open_engine

def _round(engine: Engine, actor, i: int) -> None:
    lease = engine.acquire_lease(actor, {"lines": [1, 1]}, 60)
    engine.release_lease(actor, lease["id"])
    engine.write(actor, engine.head().number, f"# Plan\n\nround {i}\n", None, f"round {i}")
    proposal = engine.create_proposal(actor, engine.head().number, None, f"# Plan\n\nproposed {i}\n", f"p {i}")
    engine.approve_proposal(actor, proposal["id"])


def _plans(engine: Engine, statements: list[str]) -> list[tuple[str, str]]:
    scans = []
    for sql in statements:
        verb = sql.lstrip().split(None, 1)[0].upper()
        if verb not in ("SELECT", "UPDATE", "DELETE", "INSERT"):
            continue
        for row in engine.store.db.execute_sql("EXPLAIN QUERY PLAN " + sql).fetchall():
            detail = row[3]
            words = detail.split()
            if words[0] == "SCAN" and "INDEX" not in detail and words[1] != "CONSTANT":
                scans.append((detail, sql))
    return scans


def test_writes_do_not_scan_history(tmp_path):
    engine = open_engine(tmp_path, "# Plan\n\nstart\n")
    try:
        actor, _ = join(engine, "alice")
        for i in range(30):
            _round(engine, actor, i)
        statements: list[str] = []
        connection = engine.store.db.connection()
        connection.set_trace_callback(statements.append)
        try:
            _round(engine, actor, 99)
        finally:
            connection.set_trace_callback(None)
        assert any('"lease"' in s for s in statements)  # the trace saw the lease statements
        assert _plans(engine, statements) == []
    finally:
        engine.close()


SCHEMA_INDEXES = {6: ("lease_open", "proposal_created", "handoff_created"),
                  7: ("task_status_created", "task_status_updated"),
                  9: ("version_session", "proposal_session", "handoff_owner_session", "handoff_event_accepted",
                      "board_message_author")}


@pytest.mark.parametrize("old", [5, 6, 8])
def test_an_older_sidecar_gains_the_history_indexes(tmp_path, old):
    engine = open_engine(tmp_path, "# Plan\n")
    sidecar = engine.store.path
    engine.close()
    con = sqlite3.connect(sidecar)
    added = [name for version, names in SCHEMA_INDEXES.items() if version > old for name in names]
    for index in added:
        con.execute(f'DROP INDEX "{index}"')
    con.execute(f"UPDATE meta SET value = '{old}' WHERE key = 'schema_version'")
    con.commit()
    con.close()
    again = Engine.open(tmp_path / "doc.md")
    try:
        assert again.store.meta("schema_version") == str(SCHEMA_VERSION) == "10"
        names = {r[0] for r in again.store.db.execute_sql(
            "SELECT name FROM sqlite_master WHERE type = 'index'").fetchall()}
        assert set(added) <= names
    finally:
        again.close()


def test_an_older_sidecar_loses_the_lease_indexes_nothing_reads(tmp_path):
    """Schema 8: a schema 7 sidecar's ``lease_session_id`` and ``lease_expires_at`` are dropped
    (every lease write paid a b-tree update for each); its leases are all kept."""
    engine = open_engine(tmp_path, "# Plan\n")
    actor, _ = join(engine, "alice")
    lease = engine.acquire_lease(actor, {"lines": [1, 1]}, 60)
    sidecar = engine.store.path
    engine.close()
    con = sqlite3.connect(sidecar)
    con.execute('CREATE INDEX "lease_session_id" ON "lease" ("session_id")')  # as schema 7 made them
    con.execute('CREATE INDEX "lease_expires_at" ON "lease" ("expires_at")')
    con.execute("UPDATE meta SET value = '7' WHERE key = 'schema_version'")
    con.commit()
    con.close()
    again = Engine.open(tmp_path / "doc.md", clock=FakeClock())  # the lease's clock: it is still live
    try:
        assert again.store.meta("schema_version") == str(SCHEMA_VERSION)
        names = {r[0] for r in again.store.db.execute_sql(
            "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'lease'").fetchall()}
        assert names == {"sqlite_autoindex_lease_1", "lease_open"}
        assert [entry["id"] for entry in again.leases(OPERATOR)["leases"]] == [lease["id"]]
    finally:
        again.close()


def test_the_task_sweep_reads_only_tasks_that_may_be_due(tmp_path):
    """The TTL sweep runs every minute on the writer thread; a room keeps a day of finished
    tasks. Each of its reads must bound the task's time, not load every task of a status."""
    engine = open_engine(tmp_path, "# Plan\n")
    try:
        actor, _ = join(engine, "alice")
        statements: list[str] = []
        connection = engine.store.db.connection()
        connection.set_trace_callback(statements.append)
        try:
            engine.sweep_tasks()
        finally:
            connection.set_trace_callback(None)
        reads = [sql for sql in statements if sql.lstrip().upper().startswith("SELECT") and '"task"' in sql]
        assert len(reads) == 2, statements  # the active tasks and the terminal ones
        for sql in reads:
            plan = " ".join(row[3] for row in engine.store.db.execute_sql("EXPLAIN QUERY PLAN " + sql).fetchall())
            assert "USING INDEX task_status_" in plan and "_at<?" in plan, (plan, sql)
    finally:
        engine.close()
