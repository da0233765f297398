"""The document's conventions survive every write path, byte for byte.

Property-based (hypothesis), in process on the engine: every corpus document
(a window of its lines, so the large changelogs stay quick) rendered LF,
CRLF or mixed, with and without a BOM and a final newline; incoming text in
any style, with or without its own BOM and final newline; every write path:

- a direct write of the whole document or of a region (lines, a heading,
  an insertion point);
- a proposal created at the head and approved;
- a proposal made on an older version, rebased when it is created, then
  approved; and one made at the head, rebased when it is approved;
- an edit made outside the room (recorded as it is), also one that changes
  the document's conventions, with a proposal rebased over it.

For LF and CRLF documents the expected bytes are computed independently
(contents spliced, then rendered in the document's conventions); for mixed
documents the structural promises are checked (contents, untouched lines
byte for byte, new lines in the dominant style or the ending of the line
they equal, BOM and final newline kept). A change of line endings, final
newline or BOM alone makes no version. The file always holds the head.

``CONVENTIONS_EXAMPLES`` (environment) scales the number of examples.
"""

from __future__ import annotations

import os
import random
import tempfile
from dataclasses import dataclass
from pathlib import Path

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from commonroom import conventions, regions
from commonroom.engine import OPERATOR, Engine
from commonroom.merge import merge3_text
from tests.fakeclock import FakeClock
from tests.roomproc import corpus_files

BOM = "\ufeff"
SCALE = float(os.environ.get("CONVENTIONS_EXAMPLES", "1"))
WINDOW = 120  # lines of a corpus document per example


def _corpus() -> dict[str, list[str]]:
    out = {}
    for path in corpus_files():
        text = path.read_bytes().decode("utf-8")
        contents = [conventions.content_of(line) for line in regions.lines_of(text)]
        if contents and contents[0].startswith(BOM):
            contents[0] = contents[0][1:]
        out[path.name] = contents
    return out


CORPUS = _corpus()
NAMES = sorted(CORPUS)


def examples(n: int) -> settings:
    return settings(max_examples=max(1, int(n * SCALE)), deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


# ---------------------------------------------------------------- documents


@dataclass
class Doc:
    """A document: its line contents (no endings, no BOM), endings, BOM."""

    contents: list[str]
    endings: list[str]  # one per line; the last is "" without a final newline
    bom: bool
    style: str  # "lf" | "crlf" | "mixed"

    @property
    def text(self) -> str:
        body = "".join(c + e for c, e in zip(self.contents, self.endings))
        return (BOM if self.bom else "") + body

    @property
    def final(self) -> bool:
        return bool(self.endings and self.endings[-1])

    @property
    def newline(self) -> str:
        return regions.newline_of(self.text)


@st.composite
def documents(draw: st.DrawFn, styles: tuple[str, ...] = ("lf", "crlf", "mixed")) -> Doc:
    name = draw(st.sampled_from(NAMES))
    lines = CORPUS[name]
    size = min(len(lines), WINDOW)
    offset = draw(st.integers(0, max(0, len(lines) - size)))
    contents = lines[offset: offset + size]
    style = draw(st.sampled_from(styles))
    if style == "mixed":
        seed = draw(st.integers(0, 2**32 - 1))
        rnd = random.Random(seed)
        endings = [rnd.choice(("\n", "\r\n")) for _ in contents]
        endings[0], endings[1] = "\n", "\r\n"  # both occur
        rnd.shuffle(endings)
    else:
        endings = ["\n" if style == "lf" else "\r\n"] * len(contents)
    if not draw(st.booleans()):
        endings[-1] = ""
    bom = draw(st.booleans())
    # read back: a last empty line without an ending is no line at all
    _, contents, endings = parse("".join(c + e for c, e in zip(contents, endings)))
    return Doc(contents, endings, bom, style)


LINE_TEXT = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\r\n\ufeff"), max_size=12)


@st.composite
def incoming(draw: st.DrawFn, doc: Doc, span: regions.Span) -> str:
    """Replacement text: new lines, lines of the region itself, in any style."""
    old = doc.contents[span.start - 1: span.end]
    kind = draw(st.sampled_from(["new", "same", "edited"]))
    if kind == "same":
        contents = list(old)
    elif kind == "edited" and old:
        contents = list(old)
        k = draw(st.integers(0, len(contents) - 1))
        contents[k] = draw(LINE_TEXT)
        if draw(st.booleans()):
            contents.insert(draw(st.integers(0, len(contents))), draw(LINE_TEXT))
    else:
        contents = draw(st.lists(LINE_TEXT, max_size=5))
    style = draw(st.sampled_from(["\n", "\r\n", "mixed"]))
    endings = [draw(st.sampled_from(["\n", "\r\n"])) if style == "mixed" else style for _ in contents]
    if contents and not draw(st.booleans()):
        endings[-1] = ""
    return (BOM if draw(st.booleans()) else "") + "".join(c + e for c, e in zip(contents, endings))


@st.composite
def spans(draw: st.DrawFn, doc: Doc, *, heading: bool = True) -> tuple[object, regions.Span]:
    """A region (as a client sends it) and its span in ``doc``."""
    n = len(doc.contents)
    kind = draw(st.sampled_from(["lines", "lines", "insert", "document", "heading"] if heading
                                else ["lines", "lines", "insert", "document"]))
    if kind == "heading":
        found = regions.headings(doc.text)
        if found:
            h = draw(st.sampled_from(found))
            region: object = {"heading": list(h.path)}
            return region, regions.resolve(doc.text, region)
        kind = "lines"
    if kind == "document":
        return None, regions.Span(1, n)
    if kind == "insert":
        k = draw(st.integers(1, n + 1))
        return {"lines": [k, k - 1]}, regions.Span(k, k - 1)
    start = draw(st.integers(1, n))
    end = draw(st.integers(start, min(n, start + 8)))
    return {"lines": [start, end]}, regions.Span(start, end)


def parse(text: str) -> tuple[bool, list[str], list[str]]:
    """(BOM, contents, endings) of a text."""
    bom = text.startswith(BOM)
    lines = regions.lines_of(text[1:] if bom else text)
    return bom, [conventions.content_of(x) for x in lines], [conventions.ending_of(x) for x in lines]


def spliced(contents: list[str], span: regions.Span, text: str) -> list[str]:
    """The contents after replacing ``span`` by ``text`` (conventions aside)."""
    _, new, _ = parse(text)
    return contents[: span.start - 1] + new + contents[span.end:]


def render(contents: list[str], newline: str, final: bool, bom: bool) -> str:
    """``contents`` in uniform conventions: the oracle for LF and CRLF documents."""
    if not contents:
        return BOM if bom else ""
    body = newline.join(contents) + (newline if final else "")
    return (BOM if bom else "") + body


# ---------------------------------------------------------------- checks


def check_result(before: Doc, result: str, contents: list[str], changed: list[regions.Span],
                 head_conv: Doc | None = None) -> None:
    """``result`` holds ``contents`` in the conventions of ``head_conv or before``.

    ``changed``: the spans (in ``before``'s numbering) that the operation
    replaced; for a mixed document every other line keeps its bytes.
    """
    conv = head_conv or before
    bom, got, endings = parse(result)
    assert got == contents
    assert bom == conv.bom or (not contents and bom == conv.bom)
    if conv.style != "mixed":
        assert result == render(contents, conv.newline, conv.final, conv.bom)
        return
    if contents:
        assert bool(endings[-1]) == conv.final
    assert set(endings[:-1]) <= {"\n", "\r\n"}
    if len(changed) == 1 and head_conv is None:
        span = changed[0]
        old = before.contents
        keep_front = max(0, span.start - 2)  # the line before may gain an ending
        assert endings[:keep_front] == before.endings[:keep_front]
        tail = len(old) - span.end
        if tail:
            assert endings[len(endings) - tail:] == before.endings[len(old) - tail:]
            assert got[len(got) - tail:] == old[len(old) - tail:]
        allowed = {before.newline, ""} | set(before.endings[max(0, span.start - 2): span.end])
        assert set(endings[keep_front: len(endings) - tail]) <= allowed


def check_file(engine: Engine) -> None:
    assert engine.document_path.read_bytes() == engine.head().text.encode("utf-8")
    assert engine.version_text(engine.head().number) == engine.head().text


class Room:
    """An engine on ``doc`` in a temp folder (the file written byte for byte)."""

    def __init__(self, doc: Doc):
        self._tmp = tempfile.TemporaryDirectory(prefix="conv-")
        path = Path(self._tmp.name) / "doc.md"
        path.write_bytes(doc.text.encode("utf-8"))
        self.engine = Engine.open(path, clock=FakeClock())

    def __enter__(self) -> Engine:
        return self.engine

    def __exit__(self, *exc: object) -> None:
        self.engine.close()
        self._tmp.cleanup()


def external(engine: Engine, text: str) -> None:
    """An edit made outside the room: new bytes renamed over the file."""
    tmp = engine.document_path.with_name("outside.tmp")
    tmp.write_bytes(text.encode("utf-8"))
    os.replace(tmp, engine.document_path)
    engine.sync_external()


# ---------------------------------------------------------------- at the head


@given(st.data())
@examples(300)
def test_write_and_proposal_at_the_head_keep_the_conventions(data: st.DataObject) -> None:
    doc = data.draw(documents())
    region, span = data.draw(spans(doc))
    text = data.draw(incoming(doc, span))
    path = data.draw(st.sampled_from(["write", "propose"]))
    contents = spliced(doc.contents, span, text)
    with Room(doc) as engine:
        if path == "write":
            info = engine.write(OPERATOR, 1, text, region=region)
        else:
            proposal = engine.create_proposal(OPERATOR, 1, region, text)
            info = engine.approve_proposal(OPERATOR, proposal["id"])["version"]
        result = engine.head().text
        check_result(doc, result, contents, [span])
        # a change of line endings, final newline or BOM alone is no change
        if contents == doc.contents:
            assert result == doc.text and info["number"] == 1 and engine.head().number == 1
        else:
            assert info["number"] == 2
        check_file(engine)


@given(st.data())
@examples(120)
def test_writing_the_same_lines_in_another_style_is_no_change(data: st.DataObject) -> None:
    doc = data.draw(documents())
    region, span = data.draw(spans(doc))
    old = doc.contents[span.start - 1: span.end]
    newline = data.draw(st.sampled_from(["\n", "\r\n"]))
    final = data.draw(st.booleans()) or (old and old[-1] == "")  # else the last empty line is gone
    text = (BOM if data.draw(st.booleans()) else "") + newline.join(old) + (newline if final and old else "")
    with Room(doc) as engine:
        if data.draw(st.booleans()):
            info = engine.write(OPERATOR, 1, text, region=region)
        else:
            proposal = engine.create_proposal(OPERATOR, 1, region, text)
            info = engine.approve_proposal(OPERATOR, proposal["id"])["version"]
        assert info["number"] == 1 and engine.head().number == 1
        assert engine.head().text == doc.text
        check_file(engine)


# ---------------------------------------------------------------- rebases


def _two_spans(data: st.DataObject, doc: Doc) -> tuple[regions.Span, regions.Span]:
    """Two line spans with at least one untouched line between them (so they merge)."""
    n = len(doc.contents)
    a_start = data.draw(st.integers(1, max(1, n // 2 - 2)))
    a_end = data.draw(st.integers(a_start - 1, min(a_start + 4, n // 2 - 1)))
    b_start = data.draw(st.integers(max(a_end, a_start) + 2, n))
    b_end = data.draw(st.integers(b_start - 1, min(n, b_start + 4)))
    first, second = regions.Span(a_start, a_end), regions.Span(b_start, b_end)
    return (first, second) if data.draw(st.booleans()) else (second, first)


def mergeable(contents: list[str], mine: tuple[regions.Span, str], theirs: tuple[regions.Span, str]) -> bool:
    """Whether the two changes merge cleanly in one uniform style (``merge3``
    may align repeated lines, such as blank ones, so that two changes a line
    apart touch: a conflict whatever the conventions; such draws are skipped)."""
    base = render(contents, "\n", True, False)
    ours = render(spliced(contents, *mine), "\n", True, False)
    other = render(spliced(contents, *theirs), "\n", True, False)
    return merge3_text(base, ours, other).clean


def _fresh(data: st.DataObject) -> str:
    contents = data.draw(st.lists(LINE_TEXT.map(lambda s: "new " + s), min_size=1, max_size=3))
    style = data.draw(st.sampled_from(["\n", "\r\n"]))
    return (BOM if data.draw(st.booleans()) else "") + style.join(contents) + style


@given(st.data())
@examples(200)
def test_rebased_proposals_keep_the_conventions(data: st.DataObject) -> None:
    """A proposal on version 1 while a write moved the head: rebased at
    creation or at approval, the result is both changes in the document's
    conventions, whatever the styles of the texts."""
    doc = data.draw(documents())
    mine, theirs = _two_spans(data, doc)
    my_text, their_text = _fresh(data), _fresh(data)
    when = data.draw(st.sampled_from(["create", "approve"]))
    assume(mergeable(doc.contents, (mine, my_text), (theirs, their_text)))
    # both changes on contents, the later span first so numbers stay valid
    contents = list(doc.contents)
    for span, text in sorted([(mine, my_text), (theirs, their_text)], key=lambda p: -p[0].start):
        contents = spliced(contents, span, text)
    with Room(doc) as engine:
        if when == "create":
            engine.write(OPERATOR, 1, their_text, region={"lines": [theirs.start, theirs.end]})
            proposal = engine.create_proposal(OPERATOR, 1, {"lines": [mine.start, mine.end]}, my_text)
            assert proposal["rebased_from"] == 1 and proposal["base_version"] == 2
        else:
            proposal = engine.create_proposal(OPERATOR, 1, {"lines": [mine.start, mine.end]}, my_text)
            engine.write(OPERATOR, 1, their_text, region={"lines": [theirs.start, theirs.end]})
        engine.approve_proposal(OPERATOR, proposal["id"])
        assert engine.head().number == 3
        check_result(doc, engine.head().text, contents, [mine, theirs])
        check_file(engine)


@given(st.data())
@examples(100)
def test_whole_document_proposal_in_another_style_rebases_cleanly(data: st.DataObject) -> None:
    """The issue's case: a whole-document proposal whose text is the document
    in another style, with one line changed, rebases over a write elsewhere."""
    doc = data.draw(documents())
    mine, theirs = _two_spans(data, doc)
    style = data.draw(st.sampled_from(["\n", "\r\n"]))
    ours = list(doc.contents)
    ours[mine.start - 1: mine.end] = ["mine"]
    text = style.join(ours) + (style if data.draw(st.booleans()) or ours[-1] == "" else "")
    their_text = _fresh(data)
    assume(mergeable(doc.contents, (mine, "mine\n"), (theirs, their_text)))
    contents = list(doc.contents)
    for span, change in sorted([(mine, "mine\n"), (theirs, their_text)], key=lambda p: -p[0].start):
        contents = spliced(contents, span, change)
    with Room(doc) as engine:
        engine.write(OPERATOR, 1, their_text, region={"lines": [theirs.start, theirs.end]})
        proposal = engine.create_proposal(OPERATOR, 1, None, text)
        assert proposal["rebased_from"] == 1
        engine.approve_proposal(OPERATOR, proposal["id"])
        check_result(doc, engine.head().text, contents, [mine, theirs])
        check_file(engine)


# ---------------------------------------------------------------- outside edits


@given(st.data())
@examples(100)
def test_outside_edits_are_recorded_as_they_are_and_proposals_rebase_over_them(data: st.DataObject) -> None:
    """An edit outside the room that changes the conventions (style, BOM,
    final newline) and maybe a line is recorded byte for byte; a proposal
    made before it rebases onto it and takes the new conventions."""
    doc = data.draw(documents(styles=("lf", "crlf")))
    mine, theirs = _two_spans(data, doc)
    edited = Doc(list(doc.contents), [], data.draw(st.booleans()), data.draw(st.sampled_from(["lf", "crlf"])))
    if data.draw(st.booleans()) and theirs.count:
        edited.contents[theirs.start - 1] = "edited outside"
    nl = "\n" if edited.style == "lf" else "\r\n"
    edited.endings = [nl] * len(edited.contents)
    if not data.draw(st.booleans()):
        edited.endings[-1] = ""
    _, edited.contents, edited.endings = parse("".join(c + e for c, e in zip(edited.contents, edited.endings)))
    my_text = _fresh(data)
    assume(mergeable(doc.contents, (mine, my_text), (regions.Span(1, len(doc.contents)), "\n".join(edited.contents))))
    with Room(doc) as engine:
        proposal = engine.create_proposal(OPERATOR, 1, {"lines": [mine.start, mine.end]}, my_text)
        external(engine, edited.text)
        if edited.text == doc.text:
            assert engine.head().number == 1
        else:
            assert engine.head().number == 2 and engine.head().text == edited.text
            assert engine.version(OPERATOR, 2)["source"] == "external"
        check_file(engine)
        engine.approve_proposal(OPERATOR, proposal["id"])
        check_result(doc, engine.head().text, spliced(edited.contents, mine, my_text), [mine], head_conv=edited)
        check_file(engine)


# ---------------------------------------------------------------- whole corpus documents


def test_every_corpus_document_whole_in_every_convention(tmp_path: Path) -> None:
    """Each whole corpus document, in LF and CRLF with and without BOM and
    final newline: a whole-document write in the other style is no change;
    a section written in the other style lands in the document's style."""
    count = 0
    for name in NAMES:
        for style in ("lf", "crlf"):
            for bom in (False, True):
                for final in (False, True):
                    nl = "\n" if style == "lf" else "\r\n"
                    contents = CORPUS[name]
                    doc = Doc(contents, [nl] * (len(contents) - 1) + [nl if final else ""], bom, style)
                    other = "\r\n" if nl == "\n" else "\n"
                    folder = tmp_path / f"{count}"
                    folder.mkdir()
                    (folder / "doc.md").write_bytes(doc.text.encode("utf-8"))
                    engine = Engine.open(folder / "doc.md", clock=FakeClock())
                    try:
                        info = engine.write(OPERATOR, 1, other.join(contents) + other)
                        assert info["number"] == 1 and engine.head().text == doc.text
                        k = len(contents) // 2
                        text = f"changed{other}lines{other}"
                        proposal = engine.create_proposal(OPERATOR, 1, {"lines": [k, k + 1]}, text)
                        engine.approve_proposal(OPERATOR, proposal["id"])
                        want = contents[: k - 1] + ["changed", "lines"] + contents[k + 1:]
                        assert engine.head().text == render(want, nl, final, bom)
                        check_file(engine)
                    finally:
                        engine.close()
                    count += 1
    assert count == len(NAMES) * 8
