"""Regions of the document: headings, line ranges, the whole document.

Pure functions over the document text (``str``); no I/O. DESIGN.md, section
*Regions*. Errors are :class:`~commonroom.errors.InvalidRegion` (HTTP 400,
``invalid_region``) carrying the region as given in the ``region`` recovery
field.

Lines
    A *line* is what :func:`lines_of` returns: the text split after each
    CommonMark line ending (``"\\n"``, ``"\\r\\n"`` or a lone ``"\\r"``), each
    line keeping its ending. For every normal document (LF, CRLF, with or
    without a final newline) this is exactly ``text.splitlines(keepends=True)``.
    Python's ``splitlines`` also breaks at ``\\v``, ``\\f``, ``\\x1c``-``\\x1e``,
    ``\\x85``, U+2028 and U+2029; CommonMark, git and editors do not, so
    neither do we (those characters stay inside their line). Use
    :func:`lines_of`, never ``str.splitlines``, when numbering lines.
    Lines are numbered from 1. ``""`` has 0 lines; ``"a"`` and ``"a\\n"`` 1.

Spans
    A :class:`Span` is an inclusive range ``start..end`` of 1-based lines.
    ``end == start - 1`` is an *empty* span: the insertion point just before
    line ``start`` (``start == n + 1`` is the end of the document). The empty
    document is ``Span(1, 0)``.

Conventions
    A document's newline style, final newline and leading BOM, kept by every
    write, are :mod:`commonroom.conventions`'s.

Headings
    Found with markdown-it-py (CommonMark preset plus the GFM table rule), so
    ATX and setext headings count and ``#`` lines inside fenced or indented
    code, HTML blocks or paragraphs (``#123``) do not. A YAML front-matter
    block (first line ``---``, closed by a ``---`` or ``...`` line) is not
    markdown and is skipped. Only top-level headings make sections; a heading
    quoted in a blockquote or nested in a list item does not. A leading BOM
    is ignored.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from markdown_it import MarkdownIt

from commonroom.errors import InvalidRegion

__all__ = [
    "Heading",
    "Span",
    "headings",
    "resolve",
    "match_headings",
    "lines_of",
    "newline_of",
    "BOM",
    "overlaps",
]

#: The byte order mark, when it leads the text (kept, never part of the first line's content).
BOM = "\ufeff"
_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")
_MD = MarkdownIt("commonmark").enable("table")
#: Characters ``str.splitlines`` breaks at that CommonMark does not.
_EXTRA_BREAK_CHARS = "\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"
#: The characters besides ``"\n"`` and ``"\r"`` at which :func:`lines_of` breaks a line.
EXTRA_BREAK_CHARS = _EXTRA_BREAK_CHARS
#: At most this many candidates are listed in an ambiguity error.
MAX_CANDIDATES = 100


@dataclass(frozen=True)
class Heading:
    """One top-level heading and its section.

    ``level`` 1-6; ``title`` the heading's inline source (ATX closing ``#``s
    and surrounding spaces removed; a multi-line setext title joined with
    single spaces); ``line`` the 1-based line of the heading (the first text
    line of a setext heading); ``end_line`` the 1-based inclusive last line of
    its section (the line before the next heading of the same or a higher
    level, else the last line of the document); ``path`` the titles of the
    enclosing headings, outermost first, then ``title``.
    """

    level: int
    title: str
    line: int
    end_line: int
    path: tuple[str, ...]


@dataclass(frozen=True)
class Span:
    """Inclusive 1-based line range ``start..end``; empty when ``end == start-1``.

    ``kind`` is ``"document"``, ``"lines"`` or ``"heading"``. ``region`` is the
    normalized region: ``{"document": True}``, ``{"lines": [start, end]}`` or
    ``{"heading": [full path]}`` (the full path resolves to the same
    heading). ``heading`` is the resolved :class:`Heading` for ``"heading"``.
    """

    start: int
    end: int
    kind: str = "lines"
    region: dict[str, Any] = field(default_factory=dict, hash=False)
    heading: Heading | None = None

    @property
    def empty(self) -> bool:
        """True for an insertion point (no lines)."""
        return self.end < self.start

    @property
    def count(self) -> int:
        """Number of lines in the span (0 when empty)."""
        return max(0, self.end - self.start + 1)


def lines_of(text: str) -> list[str]:
    """The lines of ``text`` with their endings (see the module docstring).

    ``"".join(lines_of(t)) == t`` always. When ``text`` holds none of the
    extra characters at which ``str.splitlines`` also breaks (the usual
    case), the C ``splitlines`` is used: about 8x faster on 1 MB.
    """
    if not any(c in text for c in _EXTRA_BREAK_CHARS):
        return text.splitlines(keepends=True)
    return _LINE.findall(text)


def newline_of(text: str) -> str:
    """The document's newline style: ``"\\r\\n"`` if most line endings are CRLF,
    ``"\\r"`` for a text that only uses lone CRs, else ``"\\n"`` (also for a
    text without line endings)."""
    if "\r" not in text:  # the usual LF document: one fast scan instead of two counts (per commit)
        return "\n"
    crlf = text.count("\r\n")
    lf = text.count("\n") - crlf
    if crlf and crlf >= lf:
        return "\r\n"
    if not lf and not crlf and "\r" in text:
        return "\r"
    return "\n"


def _front_matter_end(lines: list[str]) -> int:
    """Number of lines of a leading YAML front-matter block (0 if none)."""
    if not lines or lines[0].lstrip("\ufeff").rstrip() != "---":
        return 0
    for i in range(1, len(lines)):
        if lines[i].rstrip() in ("---", "..."):
            return i + 1
    return 0


def headings(text: str) -> list[Heading]:
    """All top-level headings of ``text`` in document order.

    Shapes: see :class:`Heading`. Line numbers agree with :func:`lines_of`.
    Never raises for any ``str``. The last few documents' results are cached
    (a 1 MB changelog takes about half a second to parse).
    """
    return list(_headings(text))


@lru_cache(maxsize=4)
def _headings(text: str) -> tuple[Heading, ...]:
    lines = lines_of(text)
    n = len(lines)
    skip = _front_matter_end(lines)
    # One markdown line per lines_of() line, so token.map rows are our lines.
    src = "\n".join(ln.rstrip("\r\n") for ln in lines[skip:])
    if skip == 0 and src.startswith("\ufeff"):
        src = src[1:]
    src = "\n" * skip + src
    tokens = _MD.parse(src)
    found: list[list[Any]] = []  # [level, title, line, end_line, path]
    stack: list[list[Any]] = []
    for i, tok in enumerate(tokens):
        if tok.type != "heading_open" or tok.level != 0 or tok.map is None:
            continue
        level = int(tok.tag[1:])
        inline = tokens[i + 1]
        title = " ".join(part.strip() for part in inline.content.split("\n"))
        line = tok.map[0] + 1
        while stack and stack[-1][0] >= level:
            stack.pop()[3] = line - 1
        path = tuple(h[1] for h in stack) + (title,)
        entry = [level, title, line, n, path]
        found.append(entry)
        stack.append(entry)
    return tuple(Heading(lv, t, ln, end, p) for lv, t, ln, end, p in found)


def _bad(message: str, region: Any, **details: Any) -> InvalidRegion:
    return InvalidRegion(message, details=details, region=region)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_subsequence(query: list[str] | tuple[str, ...], path: tuple[str, ...]) -> bool:
    items = iter(path)
    return all(any(q == p for p in items) for q in query)


def match_headings(found: list[Heading], query: list[str] | tuple[str, ...]) -> list[Heading]:
    """The headings of ``found`` that the heading path ``query`` names.

    A heading whose full ``path`` equals ``query`` wins: if any exist, only
    they are returned (so every heading is reachable by its full path, even
    when its path is a subsequence of a deeper heading's). Otherwise: the
    headings whose title equals ``query[-1]`` and whose ancestors contain
    ``query[:-1]`` in order, not necessarily adjacent. Exact,
    case-sensitive comparison of titles. Document order; ``[]`` for an
    empty query.
    """
    query = tuple(query)
    if not query:
        return []
    exact = [h for h in found if h.path == query]
    if exact:
        return exact
    return [h for h in found
            if h.title == query[-1] and _is_subsequence(query[:-1], h.path[:-1])]


#: At most this many titles are named in the message of a heading that matches none.
TITLES_NAMED = 12


def _no_match(query: list[str], found: list[Heading]) -> str:
    """What a person reads when the heading path ``query`` names no heading of ``found``: the path as given,
    the heading it missed by letter case alone, else the document's titles (the first :data:`TITLES_NAMED`)."""
    asked = f"no heading \"{' › '.join(query)}\""
    if not found:
        return f"{asked}: the document has no headings"
    folded = [str(title).casefold() for title in query]
    near = [h for h in found if [t.casefold() for t in h.path[-len(folded):]] == folded]
    if near:
        return f"{asked} (titles match exactly): did you mean \"{' › '.join(near[0].path)}\"?"
    titles = ", ".join(h.title for h in found[:TITLES_NAMED])
    more = f" and {len(found) - TITLES_NAMED} more" if len(found) > TITLES_NAMED else ""
    return f"{asked}; the headings: {titles}{more}"


def resolve(text: str, region: dict[str, Any] | None, *, line_count: int | None = None) -> Span:
    """Resolve a region against ``text`` to a :class:`Span`.

    Region forms:

    * ``None`` or ``{"document": true}``: all lines, ``Span(1, n)``
      (``Span(1, 0)`` for the empty document).
    * ``{"lines": [start, end]}``: 1-based inclusive, integers,
      ``1 <= start <= end <= n``; or the insertion point ``[k, k - 1]`` for
      ``1 <= k <= n + 1`` (``[n + 1, n]`` appends, ``[1, 0]`` prepends).
    * ``{"heading": [t1, ..., tk]}``: the section of the heading whose full
      path is exactly ``[t1 .. tk]`` if there is one, else of the heading
      whose title is ``tk`` and whose ancestors include ``t1 .. t(k-1)`` in
      that order, not necessarily adjacent (``["Storage"]`` works when
      unique; ``["Design", "Storage"]`` disambiguates); see
      :func:`match_headings`. Titles compare exactly (case-sensitive, the
      inline source as :func:`headings` gives it). The span is
      ``heading.line .. heading.end_line``.

    ``line_count`` (``len(lines_of(text))``) may be given when known.

    Raises :class:`InvalidRegion` (``region`` = the region given) when the
    region is malformed (not a dict, no or several keys, unknown key, wrong
    types, empty heading list; ``details.reason``), out of bounds
    (``details.reason``, ``details.line_count``), matches no heading
    (``details.reason``) or several (``details.candidates``: full paths,
    ``details.lines``: ``[line, end_line]`` of each, both capped at
    :data:`MAX_CANDIDATES`; ``details.count``: how many matched).
    """
    if region is None:
        region_in: Any = None
        region = {"document": True}
    else:
        region_in = region
    if not isinstance(region, dict):
        raise _bad("region must be an object", region_in, reason="not_an_object")
    keys = set(region)
    if len(keys) != 1 or not keys <= {"document", "lines", "heading"}:
        raise _bad(
            "region must have exactly one of 'document', 'lines', 'heading'",
            region_in,
            reason="bad_keys",
            keys=sorted(map(str, keys)),
        )
    (key,) = keys
    value = region[key]
    n = line_count if line_count is not None else len(lines_of(text))
    if key == "document":
        if value is not True:
            raise _bad("'document' must be true", region_in, reason="bad_document")
        return Span(1, n, "document", {"document": True})
    if key == "lines":
        if not (isinstance(value, (list, tuple)) and len(value) == 2
                and all(_is_int(v) for v in value)):
            raise _bad("'lines' must be [start, end] integers", region_in,
                       reason="bad_lines")
        start, end = value
        if 1 <= start and end < start - 1 <= n:  # backwards, not past the end
            raise _bad(f"lines [{start}, {end}] end before they start (an insertion point before line k is "
                       "[k, k-1])", region_in, reason="out_of_range", line_count=n)
        if start < 1 or end < start - 1 or end > n:
            raise _bad(
                f"lines [{start}, {end}] are outside the document (1..{n})",
                region_in,
                reason="out_of_range",
                line_count=n,
            )
        return Span(start, end, "lines", {"lines": [start, end]})
    if not (isinstance(value, (list, tuple)) and value
            and all(isinstance(v, str) for v in value)):
        raise _bad("'heading' must be a non-empty list of titles", region_in,
                   reason="bad_heading")
    query = list(value)
    found = headings(text)
    hits = match_headings(found, query)
    if not hits:
        raise _bad(_no_match(query, found), region_in, reason="no_match",
                   headings=[list(h.path) for h in found[:MAX_CANDIDATES]])
    if len(hits) > 1:
        shown = hits[:MAX_CANDIDATES]
        raise _bad(
            f"{len(hits)} headings match \"{' › '.join(query)}\"; give more of the path",
            region_in,
            reason="ambiguous",
            candidates=[list(h.path) for h in shown],
            lines=[[h.line, h.end_line] for h in shown],
            count=len(hits),
        )
    h = hits[0]
    return Span(h.line, h.end_line, "heading", {"heading": list(h.path)}, h)


def overlaps(a: Span, b: Span) -> bool:
    """Whether two spans touch the same text.

    Two non-empty spans overlap when they share a line. An empty span at
    point ``k`` (before line ``k``) overlaps a non-empty span ``s..e`` when
    ``s <= k <= e + 1``: inserting at either edge of a span counts as touching
    it (an insertion just after a section's last line becomes part of that
    section). Two empty spans overlap only at the same point.
    """
    if a.empty and b.empty:
        return a.start == b.start
    if a.empty:
        return b.start <= a.start <= b.end + 1
    if b.empty:
        return a.start <= b.start <= a.end + 1
    return a.start <= b.end and b.start <= a.end
