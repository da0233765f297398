"""No statement of the write path scans a table that grows with history (sidecar schema 6).

A room that has run for a while holds thousands of released leases,
decided proposals and versions; a write must not read them all. The test
records every statement SQLite runs for one round of writes (through the
connection's trace callback, so it sees what the engine really sends) and
asks SQLite's planner how each would run.
"""

from __future__ import annotations

import sqlite3

from commonroom.engine import Engine
from commonroom.store import SCHEMA_VERSION
from tests.fakeclock import join, open_engine

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


def test_a_version_5_sidecar_gains_the_history_indexes(tmp_path):
    engine = open_engine(tmp_path, "# Plan\n")
    sidecar = engine.store.path
    engine.close()
    con = sqlite3.connect(sidecar)
    for index in ("lease_open", "proposal_created", "handoff_created"):
        con.execute(f'DROP INDEX "{index}"')
    con.execute("UPDATE meta SET value = '5' WHERE key = 'schema_version'")
    con.commit()
    con.close()
    again = Engine.open(tmp_path / "doc.md")
    try:
        assert again.store.meta("schema_version") == str(SCHEMA_VERSION) == "6"
        names = {r[0] for r in again.store.db.execute_sql(
            "SELECT name FROM sqlite_master WHERE type = 'index'").fetchall()}
        assert {"lease_open", "proposal_created", "handoff_created"} <= names
    finally:
        again.close()
