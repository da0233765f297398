"""Old versions read back exactly, through the bounded checkpoint-lines cache (engine/versions.py)."""

from __future__ import annotations

from commonroom.engine import OPERATOR
from commonroom.engine.versions import CHECKPOINT_EVERY, CheckpointLines

TEXT = "".join(f"line {i}\n" for i in range(1, 41))


def test_every_version_reads_back_with_a_tiny_cache(engine):
    texts = {1: TEXT}
    for n in range(2, 2 * CHECKPOINT_EVERY + 10):
        k = 1 + (n * 7) % 40
        engine.write(OPERATOR, n - 1, f"edit {n}\n" * (1 + n % 3), {"lines": [k, k]})
        texts[n] = engine.head().text
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
    cache.put(1, ["a" * 100], 100)
    cache.put(2, ["b" * 100], 100)
    assert cache.get(1) is not None and cache.held == 2 * (100 + 64)
    for n in range(3, 20):
        cache.put(n, ["c" * 100], 100)
    assert cache.held <= 1000 and cache.get(1) is None and cache.get(19) is not None
    huge = ["x" * 2000]
    assert cache.put(99, huge, 2000) is huge and cache.get(99) is None


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
