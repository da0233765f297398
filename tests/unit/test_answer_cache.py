"""The encoded-answer cache keeps one answer per input for the head, not one per head version."""

from __future__ import annotations

from commonroom.http.answers import AnswerCache


def _answer(version: int) -> dict:
    return {"text": "x" * 100, "version": version, "content_hash": f"sha256:{version:064x}"}


def test_a_new_head_replaces_the_old_heads_answer():
    cache = AnswerCache()
    key = ("document_read", "", ())
    for version in range(1, 101):  # a hundred commits, each head read once
        assert cache.get_head(key, version) is None
        cache.put(key, _answer(version), head=version)
        assert cache.get_head(key, version) is not None
    assert cache.held == cache.get(key).size  # one entry held, not a hundred
    assert cache.get_head(key, 99) is None  # an older head's answer is a miss


def test_committed_versions_stay_until_the_byte_bound():
    cache = AnswerCache(limit=4000)
    for version in range(1, 101):
        cache.put(("version_read", "", (("number", str(version)),)), _answer(version))
    assert cache.held <= 4000 and cache.get(("version_read", "", (("number", "100"),))) is not None
    assert cache.get(("version_read", "", (("number", "1"),))) is None  # the least recent went first
