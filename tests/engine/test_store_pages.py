"""The sidecar's page size: 1 KB for a new sidecar, kept as it is for an existing one.

A commit appends every page it changed to the WAL and fsyncs it; a lease
write changes ~7-10 pages, so the page size decides how much each write
syncs (docs/performance.md, *Small pages*). SQLite fixes the size when the
file is created and cannot change it in WAL mode, so a sidecar made with
another size must keep working with it.
"""

from __future__ import annotations

import sqlite3

from commonroom.engine import OPERATOR, Engine
from commonroom.store.db import PRAGMAS
from tests.fakeclock import join, open_engine


def _page_size(engine: Engine) -> int:
    return int(engine.store.db.execute_sql("PRAGMA page_size").fetchone()[0])


def test_a_new_sidecar_has_small_pages(tmp_path):
    engine = open_engine(tmp_path, "# Plan\n\nstart\n")
    try:
        assert _page_size(engine) == PRAGMAS["page_size"] == 1024
        assert engine.store.db.execute_sql("PRAGMA journal_mode").fetchone()[0] == "wal"
    finally:
        engine.close()


def test_a_sidecar_with_other_pages_keeps_them_and_works(tmp_path):
    engine = open_engine(tmp_path, "# Plan\n\nstart\n")
    actor, _ = join(engine, "alice")
    engine.write(actor, engine.head().number, "# Plan\n\nsecond\n", None, "second")
    sidecar = engine.store.path
    engine.close()
    con = sqlite3.connect(sidecar)  # as an older commonroom made it: 4 KB pages
    con.execute("PRAGMA journal_mode=DELETE")
    con.execute("PRAGMA page_size=4096")
    con.execute("VACUUM")
    con.execute("PRAGMA journal_mode=WAL")
    con.close()

    again = Engine.open(tmp_path / "doc.md")
    try:
        assert _page_size(again) == 4096
        assert again.head().text == "# Plan\n\nsecond\n"
        again.write(OPERATOR, again.head().number, "# Plan\n\nthird\n", None, "third")
        assert again.version_text(3) == "# Plan\n\nthird\n"
    finally:
        again.close()
