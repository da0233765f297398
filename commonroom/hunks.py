"""The real hunks of a change of lines, and how a span of lines moves through them (docs/editing.md, *Leases*).

Pure functions over line lists; no I/O. A change stored as one version
is one enclosing hunk (``engine.versions.hunk``: first to last changed
line); its *real* hunks are the separate runs of changed lines inside it,
found with the line diff the proposals' three-way merge uses
(``difflib.SequenceMatcher``, as ``merge3`` runs it), without its
"popular line" heuristic (a document's many blank lines are lines like any
other). A lease moves through the real hunks: two edits far apart never
make it grow to the text between them.

A hunk is ``(start, end, count)``: old lines ``start..end`` (1-based,
inclusive; ``end == start - 1`` is a pure insertion before ``start``) were
replaced by ``count`` new lines. Hunks are in document order and never
touch each other (an unchanged line lies between any two).
"""

from __future__ import annotations

from difflib import SequenceMatcher
from typing import Sequence

Hunk = tuple[int, int, int]

__all__ = ["Hunk", "line_hunks", "move_span", "new_ranges"]


def line_hunks(old: Sequence[str], new: Sequence[str], offset: int = 0) -> list[Hunk]:
    """The real hunks turning lines ``old`` into ``new``, numbered from ``offset + 1``.

    ``offset``: the lines before ``old`` in the document (when ``old`` and
    ``new`` are the inside of an enclosing hunk). Equal lists: ``[]``.
    """
    matcher = SequenceMatcher(None, old, new, autojunk=False)
    return [(offset + i1 + 1, offset + i2, j2 - j1)
            for tag, i1, i2, j1, j2 in matcher.get_opcodes() if tag != "equal"]


def move_span(start: int, end: int, hunks: Sequence[Hunk]) -> tuple[int, int]:
    """Lines ``start..end`` of the old text, moved through ``hunks``: their place in the new text.

    - A hunk above the span (an insertion just before its first line
      included) moves it by the change in length; a hunk below it (an
      insertion just after its last line included) leaves it.
    - Lines inserted inside it (between two of its lines) make it grow.
    - A hunk that replaces some of its lines puts its new lines in their
      place: a hunk replacing its first (last) line makes the span start
      (end) where that hunk's new lines start (end). A hunk replacing lines
      one for one (as many new lines as old: a search-and-replace, other
      line endings) replaces them line for line: the span keeps its lines.
    - A span whose lines are all deleted becomes the insertion point where
      they were. An empty span (an insertion point, ``end == start - 1``)
      moves with the line after it and never grows.
    """
    new_start = _moved_start(start, hunks)
    if end < start:
        return new_start, new_start - 1
    shift = 0
    for hs, he, count in hunks:
        if he < end:  # above its last line, or inside it: it moves (or grows) by the change in length
            shift += count - (he - hs + 1)
        elif hs <= end:  # replaces its last line: it ends where the hunk's new lines end
            if count == he - hs + 1:  # line for line: where its last line's replacement is
                return new_start, end + shift
            return new_start, max(hs + shift + count - 1, new_start - 1)
        else:  # below it (an insertion just after its last line included)
            break
    return new_start, max(end + shift, new_start - 1)


def _moved_start(start: int, hunks: Sequence[Hunk]) -> int:
    """Where line ``start`` (or the insertion point before it) is after ``hunks``."""
    shift = 0
    for hs, he, count in hunks:
        if he < start:  # above it (an insertion just before it included)
            shift += count - (he - hs + 1)
        elif hs <= start:  # replaces it: where the hunk's new lines start (line for line: its own)
            return start + shift if count == he - hs + 1 else hs + shift
        else:
            break
    return start + shift


def new_ranges(hunks: Sequence[Hunk]) -> list[list[int]]:
    """Where each hunk's new lines are in the new text: ``[start, end]`` each (``end == start - 1``: a deletion there)."""
    out, shift = [], 0
    for hs, he, count in hunks:
        out.append([hs + shift, hs + shift + count - 1])
        shift += count - (he - hs + 1)
    return out
