"""Leases move by the real hunks of every change: edits outside the room, proposals and writes.

Property-based (hypothesis), in process on a real sidecar: a document of
unique lines, random leases (insertion points among them), then random
changes: edits made to the file outside the room (several hunks at once,
far apart), region writes and approved proposals. After each, every lease
covers exactly what a model of line identities says: the lines it covered
that are still there, plus lines inserted inside it (between two of its
lines, or in place of some of its lines); a lease whose lines are all gone
is the insertion point where they were, and an insertion point moves with
the line after it. The model never diffs: it knows which lines each
change kept.
"""

from __future__ import annotations

import itertools
import os
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from commonroom.engine import OPERATOR, Engine
from commonroom.hunks import line_hunks, move_span

LINES = 24


def _expected(old: list[str], new: list[str], start: int, end: int) -> tuple[int, int]:
    """Where lease ``start..end`` of ``old`` should be in ``new``, by line identity alone."""
    position = {line: i for i, line in enumerate(new)}
    common = [i for i, line in enumerate(old) if line in position]
    leased = set(range(start - 1, end))  # 0-based old indexes
    kept = {position[old[i]] for i in leased if old[i] in position}
    inside = set(kept)
    one_for_one: dict[int, int] = {}  # old index replaced line for line -> its replacement's new index
    # each run of new lines sits in a gap between two kept lines (p, q): old lines p+1..q-1 were replaced
    bounds = [-1, *common, len(old)]
    for p, q in zip(bounds, bounds[1:]):
        lo = position[old[p]] + 1 if p >= 0 else 0
        hi = position[old[q]] if q < len(old) else len(new)
        replaced = set(range(p + 1, q))
        between = p in leased and q in leased
        if replaced and len(replaced) == hi - lo:  # replaced line for line: each keeps its place
            one_for_one.update({i: lo + i - (p + 1) for i in replaced})
            inside |= {lo + i - (p + 1) for i in replaced & leased}
            if between:
                inside |= set(range(lo, hi))
        elif (replaced & leased) or between:
            inside |= set(range(lo, hi))
    if inside:
        return min(inside) + 1, max(inside) + 1
    # nothing left: the point where its lines were (an insertion point: before the line after it)
    anchor = end if end >= start else start - 1  # the line after the lease (0-based), when it is kept
    if end < start and anchor == len(old):  # the end of the document stays the end
        return len(new) + 1, len(new)
    if end < start and old[anchor] in position:
        return position[old[anchor]] + 1, position[old[anchor]]
    if end < start and anchor in one_for_one:  # the line after it replaced line for line: before its replacement
        return one_for_one[anchor] + 1, one_for_one[anchor]
    above = [i for i in common if i < start - 1]
    point = position[old[above[-1]]] + 2 if above else 1
    return point, point - 1


def test_the_model_agrees_with_move_span_on_unique_lines():
    """The engine's rule (``move_span`` over ``line_hunks``) and the identity model, by hand."""
    old = [f"o{i}\n" for i in range(1, 11)]
    new = ["x\n", *old[1:5], "y\n", *old[5:8], *old[9:]]  # line 1 replaced, one inserted before 6, 9 gone
    hunks = line_hunks(old, new)
    assert hunks == [(1, 1, 1), (6, 5, 1), (9, 9, 0)]
    for start, end in [(2, 4), (5, 7), (1, 3), (8, 10), (9, 9), (6, 5), (1, 0), (11, 10)]:
        assert move_span(start, end, hunks) == _expected(old, new, start, end), (start, end)
    swapped = ["a\n", "b\n", *old[2:]]  # lines 1-2 replaced one for one: an insertion point before 2 stays there
    assert move_span(2, 1, line_hunks(old, swapped)) == _expected(old, swapped, 2, 1) == (2, 1)


_counter = itertools.count()


def _fresh(n: int) -> list[str]:
    return [f"new {next(_counter)}\n" for _ in range(n)]


@st.composite
def _edit(draw, size: int) -> tuple[int, int, int]:
    """``(start, deleted, inserted)``: delete ``deleted`` lines from ``start`` (1-based), insert ``inserted`` there."""
    start = draw(st.integers(1, size + 1))
    deleted = draw(st.integers(0, min(3, size + 1 - start)))
    inserted = draw(st.integers(0 if deleted else 1, 3))
    return start, deleted, inserted


def _apply(lines: list[str], edits: list[tuple[int, int, int]]) -> list[str]:
    """Apply edits given on the same old text, bottom first (overlapping ones are dropped)."""
    out, last = list(lines), len(lines) + 2
    for start, deleted, inserted in sorted(edits, reverse=True):
        if start + deleted > last:  # overlaps the edit below it
            continue
        out[start - 1:start - 1 + deleted] = _fresh(inserted)
        last = start - 1
    return out


STEP = st.one_of(
    st.tuples(st.just("lease"), st.integers(1, LINES), st.integers(-1, 6)),
    st.tuples(st.just("external"), st.lists(st.tuples(st.integers(1, LINES + 1), st.integers(0, 3),
                                                      st.integers(0, 3)), min_size=2, max_size=3)),
    st.tuples(st.just("external"), st.lists(st.tuples(st.integers(1, LINES + 1), st.integers(0, 3),
                                                      st.integers(0, 3)), min_size=1, max_size=3)),
    st.tuples(st.just("write"), st.integers(1, LINES + 1), st.integers(0, 3), st.integers(0, 3)),
    st.tuples(st.just("proposal"), st.integers(1, LINES + 1), st.integers(0, 3), st.integers(0, 3)),
)


LEASE = st.tuples(st.just("lease"), st.integers(1, LINES), st.integers(-1, 6))


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(LEASE, min_size=1, max_size=4), st.lists(STEP, min_size=1, max_size=8))
# an insertion point before line 2, lines 1-2 replaced one for one: it stays before line 2's replacement
@example([("lease", 2, -1)], [("external", [(1, 0, 0), (1, 2, 2)])])
def test_every_lease_covers_its_lines_moved_by_every_change(first, then):
    steps = first + then
    with tempfile.TemporaryDirectory() as folder:
        doc = Path(folder) / "doc.md"
        lines = [f"line {i}\n" for i in range(1, LINES + 1)]
        doc.write_text("".join(lines))
        engine = Engine.open(doc)
        try:
            engine.set_ingress({"host": "127.0.0.1", "port": 1})
            caps = ["read", "lease", "write", "propose", "approve"]
            holder = engine.authenticate(engine.join(engine.invite("holder", caps)["token"])["token"])
            leases: dict[str, tuple[int, int]] = {}
            stamp = 10**18
            for step in steps:
                kind = step[0]
                size = len(lines)
                if kind == "lease":
                    start = min(step[1], size)
                    end = max(start - 1, min(start + step[2], size))  # -1: an insertion point
                    lease = engine.acquire_lease(holder, {"lines": [start, end]}, 3600)
                    leases[lease["id"]] = (start, end)
                    continue
                if kind == "external":
                    edits = [(min(s, size + 1), min(d, size + 1 - min(s, size + 1)), i) for s, d, i in step[1]]
                    new = _apply(lines, [e for e in edits if e[1] or e[2]])
                    if new == lines or not new:
                        continue
                    doc.write_text("".join(new))
                    stamp += 10**9
                    os.utime(doc, ns=(stamp, stamp))  # never the stat the room last wrote
                    engine.sync_external()
                else:
                    start = min(step[1], size + 1)
                    deleted = min(step[2], size + 1 - start)
                    inserted = _fresh(step[3])
                    if not deleted and not inserted:
                        continue
                    new = lines[:start - 1] + inserted + lines[start - 1 + deleted:]
                    if not new:
                        continue
                    region = {"lines": [start, start + deleted - 1]}
                    head = engine.head().number
                    if kind == "write":
                        engine.write(holder, head, "".join(inserted), region)
                    else:
                        made = engine.create_proposal(holder, head, region, "".join(inserted))
                        engine.approve_proposal(holder, made["id"])
                assert engine.head().text == "".join(new), step
                leases = {lid: _expected(lines, new, s, e) for lid, (s, e) in leases.items()}
                lines = new
                shown = {item["id"]: tuple(item["lines"]) for item in engine.leases(OPERATOR, limit=200)["leases"]}
                assert shown == leases, (step, shown, leases)
        finally:
            engine.close()
