"""Long histories read back byte for byte: compressed checkpoints spaced by bytes, segments
with anchors (engine/versions.py, engine/segments.py), and sidecars written before schema 10.

A seeded random history (line replacements, insertions, deletions, rewrites of most of the text,
group-committed batches, an empty document and back) is written through ``Engine.write``; every
version is then read with ``version_text`` and ``version_encoded`` (the HTTP answer's bytes) and
compared with the text the test kept: fresh, again, after a reopen (empty caches), and after the
warmer rebuilt every checkpoint and segment.
"""

from __future__ import annotations

import random
import sqlite3

import pytest

from commonroom import regions
from commonroom.engine import OPERATOR, Engine
from commonroom.engine.checkpoints import pack, unpack
from commonroom.engine.segments import ANCHOR_EVERY, CHECKPOINTS_SQL
from commonroom.engine.versions import CHECKPOINT_HUNKS, checkpoint_due, hunk
from commonroom.store.models import stored_json
from commonroom.wire import dumps
from tests.fakeclock import open_engine

TEXT = "".join(f"line {i}: {'x' * (i % 50)}\n" for i in range(1, 801))
SEED = 37


def random_history(engine: Engine, count: int, seed: int = SEED) -> dict[int, str]:
    """``count`` random writes (some in group-committed batches): ``{version: text}`` of every version."""
    rnd = random.Random(seed)
    texts = {1: engine.head().text}

    def one() -> None:
        head = engine.head()
        lines = regions.lines_of(head.text)
        kind = rnd.random()
        if not lines:
            engine.write(OPERATOR, head.number, f"# again {head.number}\n" + TEXT)
        elif kind < 0.6:  # one line changed
            k = rnd.randint(1, len(lines))
            engine.write(OPERATOR, head.number, f"changed {head.number} é \"q\" \\ \t\n", {"lines": [k, k]})
        elif kind < 0.75:  # lines inserted before a line (a region of one line, rewritten with more)
            k = rnd.randint(1, len(lines))
            extra = "".join(f"ins {head.number}.{j}\n" for j in range(rnd.randint(1, 4)))
            engine.write(OPERATOR, head.number, extra + lines[k - 1], {"lines": [k, k]})
        elif kind < 0.9:  # lines deleted
            k = rnd.randint(1, len(lines))
            engine.write(OPERATOR, head.number, "", {"lines": [k, min(len(lines), k + rnd.randint(0, 3))]})
        elif kind < 0.97:  # a longer region rewritten
            k = rnd.randint(1, len(lines))
            engine.write(OPERATOR, head.number, f"block {head.number}\n" * rnd.randint(1, 30),
                         {"lines": [k, min(len(lines), k + rnd.randint(0, 30))]})
        elif kind < 0.995:  # most of the text: stored whole
            engine.write(OPERATOR, head.number, "".join(rnd.sample(lines, len(lines))) + "tail\n")
        else:  # the empty document (no final newline either)
            engine.write(OPERATOR, head.number, "")
        texts[engine.head().number] = engine.head().text

    while len(texts) < count:
        if rnd.random() < 0.05:
            with engine.store.batch():  # group commit: later writes build on staged versions
                for _ in range(rnd.randint(2, 5)):
                    one()
        else:
            one()
    return texts


def check_every_version(engine: Engine, texts: dict[int, str], order: list[int]) -> None:
    for n in order:
        assert engine.version_text(n) == texts[n], n
        data, digest = engine.version_encoded(OPERATOR, n)
        answer = engine.version(OPERATOR, n)
        assert answer["text"] == texts[n] and data == dumps(answer), n
        assert digest == answer["content_hash"]


def test_a_seeded_random_history_reads_back_byte_for_byte(tmp_path):
    engine = open_engine(tmp_path, TEXT)
    try:
        texts = random_history(engine, 1500)
        numbers = sorted(texts)
        assert numbers == list(range(1, len(texts) + 1))
        order = numbers[:]
        random.Random(SEED).shuffle(order)
        check_every_version(engine, texts, order)  # caches filled by the reads themselves
        check_every_version(engine, texts, numbers[::-1])  # again, warm
        bases = [n for (n,) in engine.store.db.execute_sql(CHECKPOINTS_SQL).fetchall()]
        assert 1 < len(bases) < len(texts) // 4  # spaced: neither one per version nor none
        hunks = [b - a - 1 for a, b in zip(bases, bases[1:])]
        assert ANCHOR_EVERY * 2 < max(hunks) < CHECKPOINT_HUNKS  # some segment has several anchors
    finally:
        engine.close()
    again = Engine.open(tmp_path / "doc.md")  # nothing cached
    try:
        check_every_version(again, texts, order)
        warmer = again.warm_checkpoints(pause=0.0)
        assert warmer.wait(60)
        check_every_version(again, texts, order[: len(order) // 3])
    finally:
        again.close()


def test_checkpoints_are_compressed_and_spaced_by_bytes(tmp_path):
    engine = open_engine(tmp_path, TEXT)
    try:
        for i in range(300):
            k = 1 + (i * 97) % 800
            engine.write(OPERATOR, engine.head().number, f"edit {i}\n", {"lines": [k, k]})
        rows = engine.store.db.execute_sql(
            'SELECT "number", "content", "packed" FROM "version" WHERE "content" IS NOT NULL OR "packed" IS NOT NULL'
        ).fetchall()
        assert all(content is None and unpack(packed) == engine.version_text(n) for n, content, packed in rows)
        stored = sum(len(packed) for _, _, packed in rows)
        assert stored < len(rows) * len(TEXT) // 3  # compressed
        assert [n for n, _, _ in rows][0] == 1 and 2 <= len(rows) <= 12
    finally:
        engine.close()
    assert checkpoint_due(1, 25, 6, 100) and not checkpoint_due(1, 24, 6, 100)  # hunks of a quarter of the text
    assert checkpoint_due(CHECKPOINT_HUNKS, 1, 1, 10**9) and checkpoint_due(1, 1, 600, 1000)
    assert pack("ab") is None and unpack(pack("a" * 1000) or b"") == "a" * 1000  # kept as text when not smaller


def make_old_layout(engine: Engine, texts: dict[int, str], every: int = 64, schema: str = "9") -> None:
    """Rewrite ``engine``'s sidecar as schemas 8 and 9 wrote it: a text checkpoint every ``every``
    versions, no ``packed`` column, ``schema_version`` = ``schema``."""
    path = engine.store.path
    engine.close()
    con = sqlite3.connect(path)
    rows = con.execute('SELECT "number" FROM "version" ORDER BY "number"').fetchall()
    for (n,) in rows:
        if n == 1 or n % every == 0:
            con.execute('UPDATE "version" SET "content" = ?, "delta" = NULL WHERE "number" = ?', (texts[n], n))
        else:
            old, new = regions.lines_of(texts[n - 1]), regions.lines_of(texts[n])
            con.execute('UPDATE "version" SET "content" = NULL, "delta" = ? WHERE "number" = ?',
                        (stored_json(hunk(old, new)), n))
    con.execute('ALTER TABLE "version" DROP COLUMN "packed"')
    con.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", (schema,))
    con.commit()
    con.close()


@pytest.mark.parametrize(("warm", "schema"), [(False, "9"), (True, "9"), (False, "8")])
def test_a_sidecar_of_schema_8_or_9_opens_and_reads_back(tmp_path, warm, schema):
    engine = open_engine(tmp_path, TEXT)
    texts = random_history(engine, 300, seed=8)
    make_old_layout(engine, texts, schema=schema)
    again = Engine.open(tmp_path / "doc.md")
    try:
        assert again.store.meta("schema_version") == "10"
        if warm:
            assert again.warm_checkpoints(pause=0.0).wait(60)
        order = sorted(texts)
        random.Random(8).shuffle(order)
        check_every_version(again, texts, order)
        # and it goes on: new versions after the old text checkpoints
        for i in range(ANCHOR_EVERY * 3):
            again.write(OPERATOR, again.head().number, f"after upgrade {i}\n", {"lines": [1, 1]})
            texts[again.head().number] = again.head().text
        check_every_version(again, texts, sorted(texts)[-ANCHOR_EVERY * 4:])
    finally:
        again.close()


def test_compaction_repacks_a_schema_9_sidecar_and_every_version_reads_back(tmp_path):
    engine = open_engine(tmp_path, TEXT)
    texts = random_history(engine, 400, seed=9)
    make_old_layout(engine, texts, every=16)
    again = Engine.open(tmp_path / "doc.md")
    try:
        before = again.sidecar_report()
        assert before["text_checkpoints"] == before["checkpoints"] > 400 // 16
        assert sum(before["parts"].values()) <= before["file_bytes"] + before["wal_bytes"]
        check_every_version(again, texts, sorted(texts)[::7])  # caches and segments of the old layout
        done = again.sidecar_compact()
        after = done["after"]
        assert done["before"] == before and done["repacked"] >= before["checkpoints"] - 1 and done["vacuumed"]
        assert after["text_checkpoints"] == 0 and after["checkpoints"] < before["checkpoints"]
        assert after["parts"]["checkpoints"] < before["parts"]["checkpoints"]
        assert after["file_bytes"] + after["wal_bytes"] < before["file_bytes"] + before["wal_bytes"]
        assert after["wal_bytes"] == 0 and after["free_bytes"] == 0
        order = sorted(texts)
        random.Random(9).shuffle(order)
        check_every_version(again, texts, order)  # the same engine, its caches from before
        again.write(OPERATOR, again.head().number, "after compaction\n", {"lines": [1, 1]})
        texts[again.head().number] = again.head().text
        assert again.sidecar_compact()["repacked"] == 0  # nothing left to repack
    finally:
        again.close()
    fresh = Engine.open(tmp_path / "doc.md")
    try:
        check_every_version(fresh, texts, order[:200])
    finally:
        fresh.close()
