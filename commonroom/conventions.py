"""Document conventions: line endings, the final newline and the BOM survive every write.

A document's newline style, final newline and leading BOM
(:class:`Conventions`) survive every write: :func:`splice` gives the
replacement's lines the document's style (in a mixed document a line
equal to one it replaces keeps that line's ending), keeps the final
newline (or its absence) and the BOM, so a change of those alone is no
change. docs/editing.md, *Document conventions*. Lines and spans are
:mod:`commonroom.regions`'s (:func:`~commonroom.regions.lines_of`,
:class:`~commonroom.regions.Span`). Pure functions over ``str``; no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .regions import BOM, Span, lines_of, newline_of

__all__ = [
    "Conventions",
    "common_ends",
    "conform_edges",
    "content_of",
    "conventions_of",
    "ending_of",
    "replace_span",
    "splice",
]


def ending_of(line: str) -> str:
    """The line ending of one :func:`lines_of` line (``""`` for a last line without one)."""
    if line.endswith("\r\n"):
        return "\r\n"
    if line.endswith(("\n", "\r")):
        return line[-1]
    return ""


def content_of(line: str) -> str:
    """One :func:`lines_of` line without its ending (its content holds no CR or LF)."""
    return line.rstrip("\r\n")


@dataclass(frozen=True)
class Conventions:
    """What a document keeps whatever text is written into it (docs/editing.md).

    ``newline``: the dominant style (:func:`newline_of`), which new lines
    take. ``final_newline``: the last line ends with a line ending.
    ``bom``: the text starts with U+FEFF. ``settled``: the document holds at
    least one line ending, so ``newline`` and ``final_newline`` are its own
    (a document without one takes them from the first text written into
    it). ``mixed``: more than one style of line ending occurs (then each
    line kept from the document keeps its own ending).
    """

    newline: str = "\n"
    final_newline: bool = True
    bom: bool = False
    settled: bool = False
    mixed: bool = False
    empty: bool = True


def conventions_of(text: str) -> Conventions:
    """The :class:`Conventions` of ``text``: a few C-speed scans, no splitting."""
    bom = text.startswith(BOM)
    if "\r" not in text:  # the usual LF document: one scan
        settled = "\n" in text
        return Conventions("\n", text.endswith("\n"), bom, settled, False, not text)
    crlf = text.count("\r\n")
    lf = text.count("\n") - crlf
    cr = text.count("\r") - crlf
    newline = "\r\n" if crlf and crlf >= lf else "\r" if not lf and not crlf else "\n"  # as newline_of
    return Conventions(newline, text.endswith(("\n", "\r")), bom, True,
                       sum(1 for k in (crlf, lf, cr) if k) > 1, False)


def conform_edges(lines: list[str], conv: Conventions) -> list[str]:
    """``lines`` with the final newline and the BOM of ``conv`` (only the
    first and last lines are looked at; other lines are left as they are).

    A document whose text is all removed keeps its BOM (``["\ufeff"]``)."""
    if conv.empty:
        return lines
    out = lines
    if out and out[0].startswith(BOM) != conv.bom:
        out = list(out)
        out[0] = BOM + out[0] if conv.bom else out[0][1:]
        if not out[0]:
            del out[0]
    elif not out and conv.bom:
        return [BOM]
    if conv.settled and out:
        last = out[-1]
        ending = ending_of(last)
        if conv.final_newline and not ending and last != BOM:
            out = out if out is not lines else list(out)
            out[-1] = last + conv.newline
        elif not conv.final_newline and ending:
            out = out if out is not lines else list(out)
            out[-1] = last[: -len(ending)]
    return out


def replace_span(text: str, span: Span, replacement: str) -> str:
    """``text`` with lines ``span.start..span.end`` replaced by ``replacement``,
    which takes the document's conventions (see :func:`splice`)."""
    new_lines, _ = splice(lines_of(text), span, replacement, conventions_of(text))
    return "".join(new_lines)


def _endings(old: list[str], new: list[str], conv: Conventions, nl: str) -> list[str]:
    """The ending each new line takes: in a mixed document a line whose content
    matches a line it replaces keeps that line's ending; every other line
    takes the dominant style ``nl``."""
    ends = [nl] * len(new)
    if not conv.mixed or not old:
        return ends
    from difflib import SequenceMatcher

    old_content = [content_of(line) for line in old]
    limit = min(len(old), len(new))
    p = 0
    while p < limit and old_content[p] == new[p]:
        ends[p] = ending_of(old[p])
        p += 1
    q = 0
    while q < limit - p and old_content[-1 - q] == new[-1 - q]:
        ends[-1 - q] = ending_of(old[-1 - q])
        q += 1
    middle_old, middle_new = old_content[p: len(old) - q], new[p: len(new) - q]
    if middle_old and middle_new:
        for a, b, size in SequenceMatcher(None, middle_old, middle_new, autojunk=False).get_matching_blocks():
            for k in range(size):
                ends[p + b + k] = ending_of(old[p + a + k])
    return ends



def common_ends(old: list[str], new: list[str]) -> tuple[int, int]:
    """``(prefix, suffix)``: how many leading and then trailing lines ``old`` and ``new`` share.

    The two never overlap: ``prefix + suffix <= min(len(old), len(new))``.
    """
    limit = min(len(old), len(new))
    prefix = 0
    while prefix < limit and old[prefix] == new[prefix]:
        prefix += 1
    suffix = 0
    while suffix < limit - prefix and old[-1 - suffix] == new[-1 - suffix]:
        suffix += 1
    return prefix, suffix

def splice(lines: list[str], span: Span, replacement: str,
           conv: Conventions | None = None) -> tuple[list[str], dict[str, Any] | None]:
    """Replace lines ``span.start..span.end`` of ``lines`` by ``replacement``,
    in the document's conventions ``conv`` (:func:`conventions_of` of the
    document; computed from ``lines`` when omitted): ``(new_lines, hunk)``.

    The replacement's lines take the document's newline style (in a mixed
    document a line equal to one it replaces keeps that line's ending); a
    leading BOM of the replacement is dropped and the document's own BOM
    stays on its first line; the last line of the document keeps the
    document's final newline (or its absence); a line that comes to stand
    before new lines gets a line ending. A document without any line ending
    takes the replacement's conventions. All other lines are kept byte for
    byte. So a change of line endings, of the final newline or of the BOM
    alone changes nothing.

    ``hunk`` is ``{"start", "end", "lines"}``: old lines ``start..end``
    (1-based, inclusive) became ``lines``, trimmed to the lines that really
    change (``None`` in the rare case where a lone CR meets a LF across a
    seam and the lines were renumbered: diff to get it).
    ``new_lines == lines_of("".join(new_lines))``.
    Raises ``ValueError`` for a span outside ``lines``.
    """
    n = len(lines)
    if span.start < 1 or span.end < span.start - 1 or span.end > n:
        raise ValueError(f"span {span.start}..{span.end} outside 1..{n}")
    if conv is None:
        conv = conventions_of("".join(lines))
    start, end = span.start, span.end
    text = replacement[1:] if replacement.startswith(BOM) else replacement
    if conv.settled:
        nl, final = conv.newline, conv.final_newline
    else:
        nl, final = newline_of(text), text.endswith(("\n", "\r"))
    bom = conv.bom if not conv.empty else replacement.startswith(BOM)
    new = [content_of(line) for line in lines_of(text)]
    if not new and span.empty:
        return lines, {"start": start, "end": end, "lines": []}
    old = lines[start - 1: end]
    if start == 1 and old and old[0].startswith(BOM):
        old = [old[0][1:]] + old[1:]
    ends = _endings(old, new, conv, nl)
    if new and end == n:  # the new last line of the document
        if conv.mixed and old and new[-1] == content_of(old[-1]):
            ends[-1] = ending_of(old[-1])
        else:
            ends[-1] = nl if final else ""
    middle = [c + e for c, e in zip(new, ends)]
    kept_first = False
    if new and start == n + 1 and n and not ending_of(lines[-1]):
        middle = [lines[-1] + nl] + middle  # the old last line now stands before new lines
        start -= 1
        kept_first = True
    elif not new and end == n and start > 1 and conv.settled and not final and ending_of(lines[start - 2]):
        middle = [content_of(lines[start - 2])]  # the new last line keeps "no final newline"
        start -= 1
        kept_first = True
    if bom and start == 1:
        if middle:
            if not kept_first:
                middle[0] = BOM + middle[0]
            if end == 0 and n and lines[0].startswith(BOM):  # inserted before line 1: the BOM moves up
                middle.append(lines[0][1:])
                end = 1
        elif end < n:
            middle = [BOM + lines[end]]
            end += 1
        else:
            middle = [BOM]
    # trim the lines that do not change
    p, q = common_ends(lines[start - 1: end], middle)
    if p or q:
        start, end, middle = start + p, end - q, middle[p: len(middle) - q]
    new_lines = lines[: start - 1] + middle + lines[end:]
    # a lone CR meeting a LF across a seam would join two lines: renumber then
    seams = [(start - 2, start - 1), (start - 2 + len(middle), start - 1 + len(middle))]
    for left, right in seams:
        if 0 <= left and right < len(new_lines) and new_lines[left].endswith("\r") \
                and new_lines[right].startswith("\n"):
            return lines_of("".join(new_lines)), None
    return new_lines, {"start": start, "end": end, "lines": middle}
