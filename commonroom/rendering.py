"""The document as HTML for people: CommonMark through markdown-it-py, raw HTML off.

:func:`render` turns the document text into HTML for the participant
page's *Rendered* view (``document_render``, ``GET
/workspace/document/rendered``) and lists its headings; :func:`outline`
lists only the headings (``document_outline``, ``GET
/workspace/document/outline``: the text view's anchors and sections).
Pure, no I/O.

- **Nothing in a document runs.** The parser is markdown-it-py's
  CommonMark preset with ``html`` off (raw HTML, inline or block, is
  escaped and shown as text) and its link check on (``javascript:``,
  ``vbscript:``, ``file:`` and non-image ``data:`` targets are not links),
  plus the GFM table rule as for regions (:mod:`commonroom.regions`).
- **Lines.** Every top-level block carries ``data-line``: the 1-based line
  (as :func:`commonroom.regions.lines_of` numbers them) where it starts,
  so the page numbers the rendered view and marks leases on it.
- **Anchors.** Each top-level heading has ``id="h-<slug>"`` (GitHub's slug
  rule: lower case, punctuation dropped, spaces to ``-``; a repeated slug
  gains ``-1``, ``-2`` …); the ``h-`` prefix keeps a document's headings
  from clobbering the page's own element ids.
- A YAML front-matter block (as regions skip it) is shown as a code block.
- **Speed.** A 1 MB changelog takes seconds to parse, so the text is cut
  into chunks at column-0 ATX heading lines outside fenced code (a point
  where CommonMark starts a new top-level block whatever came before) and
  each chunk's rendering is kept (:data:`CHUNKS` most recent), and so is
  each chunk placed at its line and with its anchors: a new version
  re-renders only the chunks it changed, and re-places only those whose
  first line or anchors moved. A document holding link
  reference definitions (``[name]: url``, which reach across chunks) is
  rendered whole.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from typing import Any

from markdown_it import MarkdownIt

from . import regions

__all__ = ["CHUNKS", "outline", "render", "slug"]

_MD = MarkdownIt("commonmark", {"html": False}).enable("table")
_PUNCT = re.compile(r"[^\w\- ]", re.UNICODE)
_ATX = re.compile(r"#{1,6}(?:[ \t]|$)")
_FENCE = re.compile(r" {0,3}(`{3,}|~{3,})")
_REFERENCE = re.compile(r"^ {0,3}\[[^\]\n]+\]:", re.MULTILINE)
_LINE_ATTR = re.compile(r'data-line="(\d+)"')
#: Chunks whose rendering is kept (least recently used dropped first).
CHUNKS = 8192
_cache: OrderedDict[str, tuple[str, tuple[tuple[int, str, int], ...]]] = OrderedDict()
_placed_cache: OrderedDict[tuple[str, int, tuple[str, ...]], str] = OrderedDict()
_HEADING = re.compile(r'<h[1-6] data-line="\d+">')


def slug(title: str, seen: dict[str, int]) -> str:
    """The anchor of a heading titled ``title`` (``h-`` + GitHub's slug), unique within ``seen``."""
    base = _PUNCT.sub("", title.strip().lower()).replace(" ", "-") or "section"
    count = seen.get(base, 0)
    seen[base] = count + 1
    return f"h-{base}" if count == 0 else f"h-{base}-{count}"


def _chunks(lines: list[str], start: int) -> list[tuple[int, list[str]]]:
    """``(first line number, lines)`` pieces of ``lines[start:]``, cut before each top-level ATX heading."""
    out: list[tuple[int, list[str]]] = []
    first, fence = start, ""
    for index in range(start, len(lines)):
        line = lines[index]
        if fence:
            if line.lstrip(" ").startswith(fence) and line.strip(" \r\n").strip(fence[0]) == "":
                fence = ""
            continue
        opened = _FENCE.match(line)
        if opened:
            fence = opened.group(1)
            continue
        if index > first and _ATX.match(line):
            out.append((first + 1, lines[first:index]))
            first = index
    if first < len(lines):
        out.append((first + 1, lines[first:]))
    return out


def _render_chunk(text: str) -> tuple[str, tuple[tuple[int, str, int], ...]]:
    """``(html with 1-based chunk-local data-line, ((level, title, local line), …))`` of one chunk, kept."""
    found = _cache.get(text)
    if found is not None:
        _cache.move_to_end(text)
        return found
    tokens = _MD.parse(text)
    heads: list[tuple[int, str, int]] = []
    for index, token in enumerate(tokens):
        if token.map is None or token.level != 0 or token.nesting == -1:
            continue
        token.attrSet("data-line", str(token.map[0] + 1))
        if token.type == "heading_open":
            title = " ".join(part.strip() for part in tokens[index + 1].content.split("\n"))
            heads.append((int(token.tag[1:]), title, token.map[0] + 1))
    found = (_MD.renderer.render(tokens, _MD.options, {}), tuple(heads))
    _cache[text] = found
    if len(_cache) > CHUNKS:
        _cache.popitem(last=False)
    return found


def _placed(html: str, offset: int, ids: tuple[str, ...]) -> str:
    """A chunk's HTML with its lines moved down by ``offset`` and its headings' ``ids`` set, kept."""
    key = (html, offset, ids)
    found = _placed_cache.get(key)
    if found is not None:
        _placed_cache.move_to_end(key)
        return found
    out = _LINE_ATTR.sub(lambda m: f'data-line="{int(m.group(1)) + offset}"', html) if offset else html
    names = iter(ids)
    out = _HEADING.sub(lambda m: f'{m.group(0)[:-1]} id="{next(names, "")}">', out)
    _placed_cache[key] = out
    if len(_placed_cache) > CHUNKS:
        _placed_cache.popitem(last=False)
    return out


def _layout(text: str) -> tuple[list[str], int, list[tuple[int, str, tuple[tuple[int, str, int], ...]]], dict[int, str]]:
    """``(lines, front-matter lines, [(first line, chunk html, chunk headings)], {heading line: anchor})``."""
    lines = regions.lines_of(text)
    skip = 0
    if lines and lines[0].lstrip(regions.BOM).rstrip() == "---":
        skip = next((i + 1 for i in range(1, len(lines)) if lines[i].rstrip() in ("---", "...")), 0)
    plain = [line.rstrip("\r\n") + "\n" for line in lines]
    if skip == 0 and plain and plain[0].startswith(regions.BOM):
        plain[0] = plain[0][1:]
    pieces = [(skip + 1, plain[skip:])] if _REFERENCE.search(text) else _chunks(plain, skip)
    rendered = [(first, *_render_chunk("".join(chunk))) for first, chunk in pieces]
    seen: dict[str, int] = {}
    anchors = {line + first - 1: slug(title, seen) for first, _, heads in rendered for _, title, line in heads}
    return lines, skip, rendered, anchors


def _headings(lines: list[str], rendered: list[tuple[int, str, tuple[tuple[int, str, int], ...]]],
              anchors: dict[int, str]) -> list[dict[str, Any]]:
    headings: list[dict[str, Any]] = []
    stack: list[dict[str, Any]] = []
    for first, _, heads in rendered:
        for level, title, local in heads:
            line = local + first - 1
            while stack and stack[-1]["level"] >= level:
                stack.pop()["end_line"] = line - 1
            entry = {"level": level, "title": title, "line": line, "end_line": len(lines),
                     "path": [h["title"] for h in stack] + [title], "anchor": anchors[line]}
            headings.append(entry)
            stack.append(entry)
    return headings


def outline(text: str) -> list[dict[str, Any]]:
    """The headings of :func:`render` without the HTML (the same lines, paths and anchors); cheaper."""
    lines, _, rendered, anchors = _layout(text)
    return _headings(lines, rendered, anchors)


def render(text: str) -> tuple[str, list[dict[str, Any]]]:
    """``(html, headings)`` of ``text``.

    ``headings``: one ``{"level", "title", "line", "end_line", "path",
    "anchor"}`` per top-level heading in document order (``path``: the
    enclosing headings' titles, outermost first, then its own, as
    :func:`commonroom.regions.headings` gives them, so a page can propose
    to ``{"heading": path}``; ``end_line``: the last line of its section).
    Never raises for any ``str``.
    """
    lines, skip, rendered, anchors = _layout(text)
    parts: list[str] = []
    if skip:
        front = "".join(lines[:skip]).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
        parts.append(f'<pre class="front-matter" data-line="1"><code>{front}</code></pre>\n')
    for first, html, heads in rendered:
        ids = tuple(anchors[line + first - 1] for _, _, line in heads)
        parts.append(_placed(html, first - 1, ids))
    return "".join(parts), _headings(lines, rendered, anchors)
