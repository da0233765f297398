"""The in-repo copies of the shared test data are still byte-identical upstream."""

from __future__ import annotations

import pytest

from tests.shared_data import DATA, UPSTREAM

PAIRS = [
    ("corpus", "corpus"),
    ("vendor/mcp-2026-07-28", "vendor/mcp-2026-07-28"),
    ("seeds/protocol.txt", "seeds/protocol.txt"),
]


def _files(path):
    if path.is_file():
        return {"": path}
    return {str(p.relative_to(path)): p for p in sorted(path.rglob("*")) if p.is_file()}


def test_the_copies_are_present():
    assert len(list((DATA / "corpus").glob("*.md"))) >= 7
    assert (DATA / "vendor" / "mcp-2026-07-28" / "schema.json").is_file()
    assert (DATA / "vendor" / "mcp-2026-07-28" / "ext-tasks" / "schema.json").is_file()
    assert b"Code Status" in (DATA / "seeds" / "protocol.txt").read_bytes()


@pytest.mark.parametrize("ours,theirs", PAIRS)
def test_copies_match_upstream(ours, theirs):
    upstream = UPSTREAM / theirs
    if not upstream.exists():
        pytest.skip(f"no upstream {upstream} beside this checkout (a clean clone)")
    mine, source = _files(DATA / ours), _files(upstream)
    assert sorted(mine) == sorted(source)
    for name in mine:
        assert mine[name].read_bytes() == source[name].read_bytes(), name
