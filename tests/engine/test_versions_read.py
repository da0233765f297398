"""Old versions read back exactly, through the bounded checkpoint-lines caches (engine/versions.py,
engine/checkpoints.py), whether a read or the background warmer built them."""

from __future__ import annotations

import pytest

from commonroom import regions
from commonroom.engine import OPERATOR, checkpoints
from commonroom.engine.checkpoints import CheckpointLines, CheckpointWarmer, encoded_lines, entry_size, text_lines
from commonroom.engine.pieces import EncodedLines
from commonroom.wire import dumps

TEXT = "".join(f"line {i}\n" for i in range(1, 41))


def write_history(engine, count: int = 138) -> dict[int, str]:
    """Versions 2..count (one region replaced each): ``{number: text}`` of every version."""
    texts = {1: engine.head().text}
    for n in range(2, count + 1):
        k = 1 + (n * 7) % 40
        engine.write(OPERATOR, n - 1, f"edit {n}\n" * (1 + n % 3), {"lines": [k, k]})
        texts[n] = engine.head().text
    return texts


def stored_checkpoints(engine) -> list[int]:
    return [n for (n,) in engine.store.db.execute_sql(
        'SELECT "number" FROM "version" WHERE "content" IS NOT NULL OR "packed" IS NOT NULL ORDER BY "number"')]


def test_every_version_reads_back_with_a_tiny_cache(engine):
    texts = write_history(engine)
    # a cache that keeps at most one checkpoint: readers alternate between checkpoints
    engine._checkpoints = CheckpointLines(limit=len(TEXT) * 3 + 64 * 200)
    engine._version_cache.clear()
    for n in [*range(len(texts), 0, -1), *range(1, len(texts) + 1, 5)]:
        engine._version_cache.clear()
        assert engine.version_text(n) == texts[n], n
    assert engine._checkpoints.held <= engine._checkpoints.limit
    assert engine.version(OPERATOR, 3)["text"] == texts[3]


def test_the_cache_is_bounded():
    cache = CheckpointLines(limit=1000)
    cache.put(1, *text_lines(["a" * 100], 100))
    cache.put(2, *text_lines(["b" * 100], 100))
    assert cache.get(1) is not None and cache.held == 2 * (100 + 64)
    for n in range(3, 20):
        cache.put(n, *text_lines(["c" * 100], 100))
    assert cache.held <= 1000 and cache.get(1) is None and cache.get(19) is not None
    huge = encoded_lines(["x" * 2000])
    assert cache.put(99, huge, huge.size) is huge and cache.get(99) is None


def test_encoded_versions_are_the_json_of_the_answer(engine):
    from commonroom.wire import dumps

    tricky = ['quote " and \\ backslash\n', "tab\tand \x01 control\r\n", "非 ASCII é \u2028 \ue000 private\n",
              "no newline at the end"]
    for n, line in enumerate(tricky, start=2):
        engine.write(OPERATOR, n - 1, line, {"lines": [n, n]})
    for n in range(1, engine.head().number + 1):
        data, digest = engine.version_encoded(OPERATOR, n)
        answer = engine.version(OPERATOR, n)
        assert data == dumps(answer), n
        assert digest == answer["content_hash"]


def answers(engine) -> dict[int, bytes]:
    """The encoded answer of every version, checked against the JSON of ``version()``."""
    out = {}
    for n in range(1, engine.head().number + 1):
        data, digest = engine.version_encoded(OPERATOR, n)
        assert data == dumps(engine.version(OPERATOR, n)) and digest == engine.version(OPERATOR, n)["content_hash"]
        out[n] = data
    return out


def test_warmed_checkpoints_answer_the_same_bytes(engine):
    write_history(engine)
    cold = answers(engine)  # built by the reads themselves
    engine._checkpoints = CheckpointLines(checkpoints.CHECKPOINT_CACHE_BYTES)  # empty: only the warmer fills them
    engine._checkpoints_json = CheckpointLines(checkpoints.CHECKPOINT_JSON_CACHE_BYTES)
    warmer = engine.warm_checkpoints()
    assert warmer.wait(30)
    stored = stored_checkpoints(engine)
    assert len(stored) >= 3
    for n in stored:
        assert n in engine._checkpoints and n in engine._checkpoints_json
        plain = engine._checkpoints.get(n)
        assert list(plain) == regions.lines_of(engine._checkpoint_text(n))
        assert engine._checkpoints_json.get(n) == encoded_lines(list(plain))
    assert answers(engine) == cold
    engine.stop_warming()
    assert not warmer._thread.is_alive() and engine._warmer is None


def test_a_committed_checkpoint_is_warmed_after_its_commit(engine):
    write_history(engine, 20)
    warmer = engine.warm_checkpoints()
    assert warmer.wait(30)
    number = engine.head().number + 1
    assert number not in engine._checkpoints_json
    # a change of most of the text is stored whole
    engine.write(OPERATOR, number - 1, "the checkpoint\n" * 60, {"lines": [1, 30]})
    assert number in stored_checkpoints(engine)
    assert warmer.wait(30)
    kept = engine._checkpoints.get(number)
    assert kept == tuple(engine.head_lines())
    assert all(a is b for a, b in zip(kept, engine.head_lines()))  # the head's strings, not copies
    assert engine._checkpoints_json.get(number) == encoded_lines(engine.head_lines())
    engine.write(OPERATOR, number, "after it\n", {"lines": [2, 2]})
    data, _ = engine.version_encoded(OPERATOR, number + 1)
    assert data == dumps(engine.version(OPERATOR, number + 1))


def test_startup_warming_keeps_the_newest_that_fit_and_drops_nothing(engine):
    write_history(engine, 197)
    stored = stored_checkpoints(engine)
    texts = [engine._checkpoint_text(n) for n in stored]
    size = max(entry_size(len(text), len(regions.lines_of(text))) for text in texts)
    esize = max(encoded_lines(regions.lines_of(text)).size for text in texts)
    plain, encoded = CheckpointLines(limit=2 * size), CheckpointLines(limit=2 * esize + esize // 2)
    encoded.put(-1, EncodedLines.of([b"a reader's entry"]), esize // 2)  # read before the warm-up
    warmer = CheckpointWarmer(plain, encoded, engine._checkpoint_text, release=engine.store.db.close, pause=0)
    warmer.warm_stored(sorted(stored, reverse=True))
    assert warmer.wait(30)
    warmer.close()
    newest = sorted(stored, reverse=True)[:2]
    assert [n for n in stored if n in plain] == sorted(newest)
    assert [n for n in stored if n in encoded] == sorted(newest) and -1 in encoded
    assert plain.held <= plain.limit and encoded.held <= encoded.limit


def test_reads_while_warming_see_whole_entries_only(engine):
    texts = write_history(engine)
    expected = answers(engine)
    for _ in range(3):
        plain, encoded = CheckpointLines(), CheckpointLines(limit=checkpoints.CHECKPOINT_JSON_CACHE_BYTES)
        engine._checkpoints, engine._checkpoints_json = plain, encoded
        warmer = CheckpointWarmer(plain, encoded, engine._checkpoint_text, release=engine.store.db.close, pause=0)
        warmer.warm_stored(sorted(stored_checkpoints(engine), reverse=True))  # its thread runs along the reads
        for n in range(1, len(texts) + 1):
            engine._version_cache.clear()
            assert engine.version_encoded(OPERATOR, n)[0] == expected[n]
            assert engine.version_text(n) == texts[n]
        assert warmer.wait(30)
        warmer.close()


@pytest.mark.parametrize("text", [
    "a\nb\r\nc\rd\n" * 50,
    "\r\n".join(f"row {i}" for i in range(300)),
    ("x" * 7 + "\r") * 40 + "\n" + ("y\u2028z\x0c\n" * 60) + "no final newline",
    "",
    "one line, no newline",
])
def test_the_warmer_splits_lines_like_lines_of(monkeypatch, text):
    monkeypatch.setattr(checkpoints, "PIECE_CHARS", 16)
    warmer = CheckpointWarmer(CheckpointLines(), CheckpointLines(), lambda n: text, pause=0)
    try:
        assert warmer._split(text) == regions.lines_of(text)
    finally:
        warmer.close()


def test_a_closed_warmer_stops_and_a_failed_load_is_not_fatal():
    def load(number):
        raise OSError("the sidecar is gone")

    plain, encoded = CheckpointLines(), CheckpointLines()
    warmer = CheckpointWarmer(plain, encoded, load, pause=0)
    warmer.warm_stored([3, 2, 1])
    assert warmer.wait(30)
    assert plain.held == 0 and encoded.held == 0
    warmer.submit(5, "a\nb\n", ["a\n", "b\n"])
    assert warmer.wait(30)
    assert encoded.get(5) == EncodedLines.of([b"a\\n", b"b\\n"])
    warmer.close()
    assert not warmer._thread.is_alive()
