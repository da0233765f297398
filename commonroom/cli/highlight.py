"""The document on a terminal: its own lines, every character kept, lightly highlighted.

``ce read`` on a terminal prints the markdown as it is written, not
rendered: a heading keeps its ``#`` (so what ``--heading`` takes is in
plain sight), a wrapped line that starts with an inline HTML comment stays,
and no line is padded. Only colour is added (:func:`highlight`), from the
blocks markdown-it-py (CommonMark) finds: heading lines bold blue, fenced
and indented code cyan, HTML blocks dim. With ``NO_COLOR`` set there is no
escape sequence at all.

Characters that would steer the terminal (C0 controls but tab, DEL, C1
controls) are shown as their Unicode control pictures (``ESC`` as ``␛``),
C1 ones as ``�``: a document cannot move the cursor or recolour the
screen. Line endings (LF, CRLF, a lone CR) end a line as LF. Piped output
is not this module's: it is the document's exact bytes.
"""

from __future__ import annotations

import re

#: The ANSI style of each kind of block (SGR parameters).
STYLES = {"heading": "1;34", "code": "36", "html": "2"}

#: markdown-it-py's block tokens whose lines take a style, by token type.
_KINDS = {"heading_open": "heading", "fence": "code", "code_block": "code", "html_block": "html"}

#: Line endings as CommonMark (and markdown-it-py's line map) count them.
_ENDINGS = re.compile(r"\r\n|\r|\n")

#: Characters a terminal would act on instead of showing.
_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def _visible(match: re.Match[str]) -> str:
    code = ord(match.group(0))
    if code < 0x20:
        return chr(0x2400 + code)  # ␀ … ␟
    return "\u2421" if code == 0x7F else "\ufffd"


def line_kinds(text: str) -> dict[int, str]:
    """The highlighted lines of ``text``: 0-based line number -> ``heading``, ``code`` or ``html``.

    From markdown-it-py's block map (CommonMark), at any depth (a heading
    in a list item, a fence in a block quote); a setext heading's underline
    is part of its heading.
    """
    from markdown_it import MarkdownIt

    kinds: dict[int, str] = {}
    for token in MarkdownIt("commonmark").parse(text):
        kind = _KINDS.get(token.type)
        if kind is not None and token.map:
            start, end = token.map
            for number in range(start, end):
                kinds.setdefault(number, kind)
    return kinds


def highlight(text: str, colour: bool = True) -> str:
    """``text`` for a terminal: every line as written, LF-ended, styled by :func:`line_kinds` when ``colour``.

    Each word and character of ``text`` is in the result in its order;
    only control characters are replaced (by their control pictures) and
    line endings become LF. A styled line is wrapped in one SGR sequence and
    a reset, so the style never leaks into the next line.
    """
    lines = _ENDINGS.split(text)
    if lines and lines[-1] == "":
        lines.pop()  # the text's final line ending ends the last line; no empty line after it
    kinds = line_kinds(text) if colour else {}
    out = []
    for number, raw in enumerate(lines):
        shown = _CONTROLS.sub(_visible, raw)
        kind = kinds.get(number)
        out.append(f"\x1b[{STYLES[kind]}m{shown}\x1b[0m" if kind and shown else shown)
    return "".join(f"{line}\n" for line in out)
