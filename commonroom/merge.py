"""Three-way merge and unified diffs of documents (DESIGN.md, *Proposals*).

Pure functions over ``str``; no I/O, nothing raised for any ``str`` input.
Lines are :func:`commonroom.regions.lines_of` lines (keeping their endings),
so a CRLF line and an LF line with the same text differ, and a last line
without a newline differs from the same line with one (as in git), unless
the merge is asked to compare normalized lines (``normalize=True``: what the
room's rebases do; docs/editing.md, *Conventions*).
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from typing import Any, Iterator

from merge3 import Merge3

from commonroom.conventions import content_of, ending_of
from commonroom.regions import BOM, lines_of

__all__ = ["MergeResult", "merge3_text", "unified_diff"]

NO_NEWLINE = "\\ No newline at end of file\n"


@dataclass
class MergeResult:
    """Outcome of :func:`merge3_text`.

    ``clean``: no conflicting hunk. ``text``: the merged document when clean,
    else ``None``. ``conflicts``: one dict per conflicting hunk, in document
    order::

        {"base": [lines], "ours": [lines], "theirs": [lines],   # keepends
         "base_start": int, "base_end": int,                    # 1-based,
         "ours_start": int, "ours_end": int,                    # inclusive;
         "theirs_start": int, "theirs_end": int}                # end=start-1: empty

    An empty ``base`` range (``base_end == base_start - 1``) is an insertion
    before base line ``base_start``.
    """

    clean: bool
    text: str | None
    conflicts: list[dict[str, Any]] = field(default_factory=list)


def _common_prefix(seqs: list[list[str]]) -> int:
    limit = min(len(s) for s in seqs)
    i = 0
    while i < limit and seqs[0][i] == seqs[1][i] == seqs[2][i]:
        i += 1
    return i


def _common_suffix(seqs: list[list[str]], prefix: int) -> int:
    limit = min(len(s) for s in seqs) - prefix
    i = 0
    while i < limit and seqs[0][-1 - i] == seqs[1][-1 - i] == seqs[2][-1 - i]:
        i += 1
    return i


def _key(lines: list[str]) -> list[str]:
    """What a normalized merge compares: each line without its ending, the
    first without a leading BOM."""
    keys = [content_of(line) for line in lines]
    if keys and keys[0].startswith(BOM):
        keys[0] = keys[0][1:]
    return keys


def _regions(m: Merge3) -> Iterator[tuple[str, int, int, int, int, int, int]]:
    """``merge3``'s regions with the ranges of all three sides:
    ``(kind, base_start, base_end, ours_start, ours_end, theirs_start, theirs_end)``
    (0-based, end exclusive); kind ``unchanged``, ``same``, ``a``, ``b`` or
    ``conflict``. The same decisions as ``Merge3.merge_regions``."""
    iz = ia = ib = 0
    for zmatch, zend, amatch, aend, bmatch, bend in m.find_sync_regions():
        if amatch - ia or bmatch - ib:
            a, b, base = m.a[ia:amatch], m.b[ib:bmatch], m.base[iz:zmatch]
            if a == b:
                kind = "same"
            elif a == base:
                kind = "b"
            elif b == base:
                kind = "a"
            else:
                kind = "conflict"
            yield kind, iz, zmatch, ia, amatch, ib, bmatch
            ia, ib = amatch, bmatch
        iz = zmatch
        if zend > zmatch:
            yield "unchanged", zmatch, zend, amatch, aend, bmatch, bend
            iz, ia, ib = zend, aend, bend


def merge3_text(base: str, ours: str, theirs: str, *, normalize: bool = False,
                newline: str | None = None) -> MergeResult:
    """Merge the changes base→ours and base→theirs, line by line.

    Changes on one side only are taken; identical changes on both sides are
    taken once; different changes to the same or adjacent base lines, and
    different insertions at the same point, are conflicts (then ``text`` is
    ``None``). Lines shared by all three at the start and the end are set
    aside before merging (they cannot conflict; this keeps large documents
    fast and the alignment local to the edits).

    ``normalize``: lines compare without their endings (and the first line
    without a leading BOM), so a change of line endings alone is no change;
    a line that is the same on both sides (or unchanged) is then taken from
    ``theirs`` byte for byte, and a line changed by ``ours`` alone from
    ``ours``, with ``newline`` as its ending when given (and it has one);
    a leading BOM is dropped from every side (so a line that was first in
    one text and is not in the merge never carries it inside the document).
    The caller puts the final newline and the BOM it keeps
    (``conventions.conform_edges``).
    """
    seqs = [lines_of(base), lines_of(ours), lines_of(theirs)]
    if normalize:  # a leading BOM belongs to the document, not to its first line: the caller puts it back
        seqs = [[s[0][1:], *s[1:]] if s and s[0].startswith(BOM) else s for s in seqs]
    keys = [_key(s) for s in seqs] if normalize else seqs
    pre = _common_prefix(keys)
    suf = _common_suffix(keys, pre)
    mid = [s[pre: len(s) - suf] for s in seqs]
    kmid = [k[pre: len(k) - suf] for k in keys]
    m = Merge3(kmid[0], kmid[1], kmid[2])
    out: list[str] = list(seqs[2 if normalize else 0][:pre])
    conflicts: list[dict[str, Any]] = []
    for what, zs, ze, as_, ae, bs, be in _regions(m):
        if what == "unchanged":
            out.extend(mid[2][bs:be] if normalize else mid[0][zs:ze])
        elif what == "same":
            out.extend(mid[2][bs:be] if normalize else mid[1][as_:ae])
        elif what == "a":
            taken = mid[1][as_:ae]
            if newline is not None:
                taken = [content_of(line) + newline if ending_of(line) else line for line in taken]
            out.extend(taken)
        elif what == "b":
            out.extend(mid[2][bs:be])
        else:
            conflicts.append({
                "base": mid[0][zs:ze],
                "ours": mid[1][as_:ae],
                "theirs": mid[2][bs:be],
                "base_start": pre + zs + 1,
                "base_end": pre + ze,
                "ours_start": pre + as_ + 1,
                "ours_end": pre + ae,
                "theirs_start": pre + bs + 1,
                "theirs_end": pre + be,
            })
    if conflicts:
        return MergeResult(False, None, conflicts)
    out.extend(seqs[2 if normalize else 0][len(seqs[2 if normalize else 0]) - suf:])
    return MergeResult(True, "".join(out), [])


def unified_diff(a: str, b: str, a_label: str, b_label: str, context: int = 3) -> str:
    """A unified diff from ``a`` to ``b`` (``""`` when they are equal).

    Headers ``--- a_label`` / ``+++ b_label``, ``context`` lines of context,
    lines as :func:`~commonroom.regions.lines_of` gives them (CRLF kept). A
    last line without a line ending is followed by
    ``\\ No newline at end of file``, as git prints it.
    """
    out: list[str] = []
    for line in difflib.unified_diff(
        lines_of(a), lines_of(b), a_label, b_label, n=context, lineterm="\n"
    ):
        if line.endswith(("\n", "\r")):
            out.append(line)
        else:
            out.append(line + "\n")
            out.append(NO_NEWLINE)
    return "".join(out)
