"""Three-way merge and unified diffs of documents (DESIGN.md, *Proposals*).

Pure functions over ``str``; no I/O, nothing raised for any ``str`` input.
Lines are :func:`commonroom.regions.lines_of` lines (keeping their endings),
so a CRLF line and an LF line with the same text differ, and a last line
without a newline differs from the same line with one (as in git).
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from typing import Any

from merge3 import Merge3

from commonroom.regions import lines_of

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


def merge3_text(base: str, ours: str, theirs: str) -> MergeResult:
    """Merge the changes base→ours and base→theirs, line by line.

    Changes on one side only are taken; identical changes on both sides are
    taken once; different changes to the same or adjacent base lines, and
    different insertions at the same point, are conflicts (then ``text`` is
    ``None``). Lines shared by all three at the start and the end are set
    aside before merging (they cannot conflict; this keeps large documents
    fast and the alignment local to the edits).
    """
    seqs = [lines_of(base), lines_of(ours), lines_of(theirs)]
    pre = _common_prefix(seqs)
    suf = _common_suffix(seqs, pre)
    mid = [s[pre: len(s) - suf] for s in seqs]
    m = Merge3(mid[0], mid[1], mid[2])
    out: list[str] = list(seqs[0][:pre])
    conflicts: list[dict[str, Any]] = []
    for region in m.merge_regions():
        what = region[0]
        if what == "unchanged":
            out.extend(mid[0][region[1]: region[2]])
        elif what in ("a", "same"):
            out.extend(mid[1][region[1]: region[2]])
        elif what == "b":
            out.extend(mid[2][region[1]: region[2]])
        elif len(region) == 7:  # conflict
            _, zs, ze, as_, ae, bs, be = region
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
    out.extend(seqs[0][len(seqs[0]) - suf:])
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
