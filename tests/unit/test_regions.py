"""commonroom.regions against the real corpus and hand-made documents."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from commonroom.errors import InvalidRegion
from tests.shared_data import CORPUS as SHARED_CORPUS
from commonroom.regions import (
    Span,
    headings,
    lines_of,
    match_headings,
    newline_of,
    overlaps,
    resolve,
)
from commonroom.conventions import replace_span

CORPUS = SHARED_CORPUS
TABLE = json.loads(
    (Path(__file__).parents[1] / "conformance" / "regions" / "headings.json").read_text(encoding="utf-8")
)
FILES = sorted(TABLE)


def corpus(name: str) -> str:
    return (CORPUS / name).read_bytes().decode("utf-8")


def invalid(text: str, region) -> InvalidRegion:
    with pytest.raises(InvalidRegion) as info:
        resolve(text, region)
    err = info.value
    assert err.code == "invalid_region" and err.status == 400
    assert err.to_dict()["region"] == region
    return err


# ------------------------------------------------------------ corpus table


def test_table_covers_corpus():
    assert sorted(p.name for p in CORPUS.glob("*.md")) == FILES


@pytest.mark.parametrize("name", FILES)
def test_headings_match_table(name: str):
    got = [[h.level, h.title, h.line, h.end_line] for h in headings(corpus(name))]
    assert got == TABLE[name]


@pytest.mark.parametrize("name", FILES)
def test_heading_lines_are_heading_lines(name: str):
    text = corpus(name)
    lines = lines_of(text)
    assert lines == text.splitlines(keepends=True)
    hs = headings(text)
    for h in hs:
        line = lines[h.line - 1]
        if line.startswith("#"):
            assert h.title in line
        else:  # setext: the underline follows
            assert lines[h.line].strip()[0] in "=-"
        assert h.line <= h.end_line <= len(lines)
        assert h.path[-1] == h.title and len(h.path) <= h.level
    for a, b in zip(hs, hs[1:]):
        if b.level <= a.level:
            assert a.end_line == b.line - 1


def fenced_hash_lines(text: str) -> list[int]:
    """Lines starting with '#' inside ``` fences (a simple independent scan)."""
    found, fence = [], None
    for i, line in enumerate(text.splitlines(), 1):
        s = line.strip()
        if fence is None:
            if s.startswith(("```", "~~~")):
                fence = s[:3]
        elif s.startswith(fence) and set(s) == {fence[0]}:
            fence = None
        elif s.startswith("#"):
            found.append(i)
    return found


def test_hash_lines_in_code_fences_are_not_headings():
    gunicorn = fenced_hash_lines(corpus("gunicorn-dirty.md"))
    detours = fenced_hash_lines(corpus("detours-bug-report-template.md"))
    assert len(gunicorn) == 62 and 139 in gunicorn
    assert detours == [19, 20, 21]
    assert not set(gunicorn) & {h[2] for h in TABLE["gunicorn-dirty.md"]}
    assert TABLE["detours-bug-report-template.md"] == []


def test_front_matter_is_not_a_setext_heading():
    assert TABLE["gunicorn-dirty.md"][0] == [1, "Dirty Arbiters", 8, 1263]
    text = "---\ntitle: x\nmenu: y\n---\n\n# Real\n"
    assert [(h.title, h.line) for h in headings(text)] == [("Real", 6)]
    # without a closing line it is a thematic break, then a paragraph
    assert headings("---\ntitle: x\n") == []


def test_hash_without_space_and_html_h3_are_not_headings():
    mongoose = {h[2] for h in TABLE["mongoose-CHANGELOG.md"]}
    lines = lines_of(corpus("mongoose-CHANGELOG.md"))
    assert lines[1188].startswith("#14546") and 1189 not in mongoose
    assert lines[1817].startswith("#13148") and 1818 not in mongoose
    angular = corpus("angular-cli-CHANGELOG.md")
    h3 = [i for i, line in enumerate(lines_of(angular), 1) if "<h3>" in line]
    assert len(h3) == 164
    assert not set(h3) & {h[2] for h in TABLE["angular-cli-CHANGELOG.md"]}


def test_setext_headings_cmark():
    hs = headings(corpus("cmark-README.md"))
    assert [(h.level, h.title, h.line) for h in hs][:2] == [(1, "cmark", 1), (2, "Installing", 66)]
    span = resolve(corpus("cmark-README.md"), {"heading": ["cmark", "Usage"]})
    assert (span.start, span.end, span.kind) == (144, 149, "heading")
    assert span.region == {"heading": ["cmark", "Usage"]}


def test_setext_and_atx_forms():
    text = "Multi\nline title\n===\n\nSub\n---\n\n## Closed ##   \n#\tTab\n"
    hs = headings(text)
    assert [(h.level, h.title, h.line) for h in hs] == [
        (1, "Multi line title", 1),
        (2, "Sub", 5),
        (2, "Closed", 8),
        (1, "Tab", 9),
    ]
    assert [h.end_line for h in hs] == [8, 7, 8, 9]


def test_code_blocks_and_nested_headings():
    text = (
        "# A\n"
        "```\n# not\n```\n"
        "    # indented code\n"
        "\n"
        "<div>\n# not html\n</div>\n"
        "\n"
        "> # quoted\n"
        "- # in a list\n"
        "~~~~\n## not\n~~~~\n"
        "## B\n"
    )
    assert [(h.title, h.line) for h in headings(text)] == [("A", 1), ("B", 16)]


def test_no_text_and_bom():
    assert headings("") == []
    assert resolve("", None) == Span(1, 0, "document", {"document": True})
    hs = headings("\ufeff# Title\nbody\n")
    assert [(h.title, h.line, h.end_line) for h in hs] == [("Title", 1, 2)]


# ------------------------------------------------------------ paths


def test_duplicate_titles_disambiguated_by_path():
    text = corpus("gunicorn-dirty.md")
    err = invalid(text, {"heading": ["Architecture"]})
    assert err.details["reason"] == "ambiguous"
    assert err.details["candidates"] == [
        ["Dirty Arbiters", "Architecture"],
        ["Dirty Arbiters", "Stash (Shared State via Message Passing)", "Architecture"],
    ]
    assert err.details["lines"] == [[87, 133], [613, 637]]
    assert err.details["count"] == 2
    stash = resolve(text, {"heading": ["Stash (Shared State via Message Passing)", "Architecture"]})
    assert (stash.start, stash.end) == (613, 637)
    assert stash.region == {"heading": ["Dirty Arbiters", "Stash (Shared State via Message Passing)", "Architecture"]}
    assert stash.heading is not None and stash.heading.level == 3
    # the full path of the ## wins over the deeper heading it is a subsequence of
    top = resolve(text, {"heading": ["Dirty Arbiters", "Architecture"]})
    assert (top.start, top.end) == (87, 133)
    # three at two levels
    err = invalid(text, {"heading": ["Error Handling"]})
    assert [c[0] for c in err.details["lines"]] == [256, 819, 1145]


def test_ancestors_need_not_be_adjacent_but_in_order():
    text = corpus("system-design-primer-README-zh-Hans.md")
    deep = resolve(text, {"heading": ["缓存", "缓存模式", "缓存的缺点："]})
    assert (deep.start, deep.end) == (1193, 1198)
    skip = resolve(text, {"heading": ["系统设计入门", "何时更新缓存", "缓存的缺点："]})
    assert skip.start == 1193
    shallow = resolve(text, {"heading": ["系统设计入门", "缓存", "缓存的缺点："]})
    assert (shallow.start, shallow.end) == (1268, 1273)  # exact full path
    err = invalid(text, {"heading": ["缓存模式", "缓存", "缓存的缺点："]})  # wrong order
    assert err.details["reason"] == "no_match"


def test_titles_are_case_sensitive_inline_source():
    text = corpus("vscode-powershell-preview_to_stable_changelog.md")
    title = "[vscode-powershell](https://github.com/powershell/vscode-powershell)"
    err = invalid(text, {"heading": [title]})
    assert err.details["count"] == 3
    span = resolve(text, {"heading": ["v2.0.0-preview.3", title]})
    assert (span.start, span.end) == (258, 266)
    upper = "[vscode-PowerShell](https://github.com/PowerShell/vscode-PowerShell)"
    span = resolve(text, {"heading": ["v2020.2.0", upper]})
    assert (span.start, span.end) == (20, 38)
    invalid(text, {"heading": ["v2020.2.0", title]})


@pytest.mark.parametrize("name", FILES)
def test_every_heading_reachable_by_full_path(name: str):
    """Each heading's full path names it alone, unless the very same path repeats."""
    hs = headings(corpus(name))
    paths = [h.path for h in hs]
    for h in hs:
        got = match_headings(hs, h.path)
        if paths.count(h.path) == 1:
            assert got == [h]
        else:
            assert h in got and len(got) == paths.count(h.path)


def test_no_match_and_no_headings():
    err = invalid(corpus("cmark-README.md"), {"heading": ["Nope"]})
    assert err.details["reason"] == "no_match"
    err = invalid(corpus("detours-bug-report-template.md"), {"heading": ["Describe the bug"]})
    assert err.details["reason"] == "no_match"


def test_candidates_are_capped():
    text = corpus("angular-cli-CHANGELOG.md")
    err = invalid(text, {"heading": ["@angular/build"]})
    assert err.details["count"] == 145
    assert len(err.details["candidates"]) == len(err.details["lines"]) == 100
    assert all(c[-1] == "@angular/build" for c in err.details["candidates"])


@pytest.mark.parametrize(
    "region",
    [
        "document",
        [1, 2],
        {},
        {"document": False},
        {"document": 1},
        {"lines": [1, 2], "document": True},
        {"lines": [1]},
        {"lines": [1, 2, 3]},
        {"lines": "1-2"},
        {"lines": [1.0, 2]},
        {"lines": [True, 2]},
        {"heading": []},
        {"heading": "Usage"},
        {"heading": ["cmark", 3]},
        {"section": ["Usage"]},
    ],
)
def test_malformed_regions(region):
    err = invalid(corpus("cmark-README.md"), region)
    assert "reason" in err.details


# ------------------------------------------------------------ lines and document


def test_document_region():
    text = corpus("cmark-README.md")
    for region in (None, {"document": True}):
        span = resolve(text, region)
        assert (span.start, span.end, span.kind) == (1, 190, "document")
        assert span.region == {"document": True}
    assert resolve("no newline", None) == Span(1, 1, "document", {"document": True})


def test_lines_region_bounds():
    text = corpus("cmark-README.md")  # 190 lines
    span = resolve(text, {"lines": [1, 190]})
    assert (span.start, span.end, span.kind, span.region) == (1, 190, "lines", {"lines": [1, 190]})
    assert resolve(text, {"lines": [5, 5]}).count == 1
    for bad in ([0, 3], [3, 191], [191, 191], [5, 3], [-1, 2], [192, 191]):
        err = invalid(text, {"lines": bad})
        assert err.details == {"reason": "out_of_range", "line_count": 190}


def test_empty_insertion_points():
    text = "a\nb\n"
    for k in (1, 2, 3):
        span = resolve(text, {"lines": [k, k - 1]})
        assert span.empty and span.count == 0
    invalid(text, {"lines": [4, 3]})
    assert resolve("", {"lines": [1, 0]}).empty
    invalid("", {"lines": [1, 1]})
    assert replace_span(text, resolve(text, {"lines": [3, 2]}), "c\n") == "a\nb\nc\n"
    assert replace_span(text, resolve(text, {"lines": [1, 0]}), "z") == "z\na\nb\n"
    assert replace_span(text, resolve(text, {"lines": [2, 1]}), "") == text


def test_crlf_document():
    name = "vscode-powershell-preview_to_stable_changelog.md"
    text = corpus(name)
    lines = lines_of(text)
    assert len(lines) == 363 and all(line.endswith("\r\n") for line in lines)
    assert newline_of(text) == "\r\n"
    span = resolve(text, {"heading": ["v2020.2.0"]})
    assert (span.start, span.end) == (18, 69)
    assert lines[17] == "## v2020.2.0\r\n"
    assert all("\r" not in h.title for h in headings(text))
    new = replace_span(text, span, "## v2020.2.0\r\nrewritten")
    new_lines = lines_of(new)
    assert new_lines[:17] == lines[:17]
    assert new_lines[17:19] == ["## v2020.2.0\r\n", "rewritten\r\n"]
    assert new_lines[19:] == lines[69:]


def test_lines_of_and_newline_of():
    assert lines_of("") == []
    assert lines_of("a") == ["a"]
    assert lines_of("a\r\nb\rc\n\nd") == ["a\r\n", "b\r", "c\n", "\n", "d"]
    # only CommonMark line endings split; form feed and U+2028 stay inside
    assert lines_of("a\fb\u2028c\n") == ["a\fb\u2028c\n"]
    assert headings("# A\u2028B\n## C\n")[1].line == 2
    assert newline_of("a\nb\n") == "\n" and newline_of("x") == "\n"
    assert newline_of("a\rb\r") == "\r"


# ------------------------------------------------------------ replace_span


@pytest.mark.parametrize("name", FILES)
def test_replace_span_keeps_other_lines_byte_exact(name: str):
    raw = (CORPUS / name).read_bytes()
    text = raw.decode("utf-8")
    lines = lines_of(text)
    n = len(lines)
    start, end = n // 3, n // 3 + 5
    span = resolve(text, {"lines": [start, end]})
    new = replace_span(text, span, "one\ntwo")
    nl = "\r\n" if "\r\n" in text else "\n"
    assert new.encode("utf-8") == b"".join(
        [line.encode("utf-8") for line in lines[: start - 1]]
        + [f"one{nl}two{nl}".encode()]  # the replacement takes the document's newline style
        + [line.encode("utf-8") for line in lines[end:]]
    )
    # replacing a span by its own text is the identity
    assert replace_span(text, span, "".join(lines[start - 1: end])) == text
    assert replace_span(text, resolve(text, None), text) == text


def test_replace_span_heading_section():
    text = corpus("cmark-README.md")
    span = resolve(text, {"heading": ["Security"]})
    new = replace_span(text, span, "Security\n--------\n\nShort.\n\n")
    assert [h.title for h in headings(new)] == [h.title for h in headings(text)]
    assert resolve(new, {"heading": ["Contributing"]}).start == span.start + 5


def test_replace_span_no_final_newline():
    assert replace_span("a\nb", Span(2, 2), "B") == "a\nB"
    assert replace_span("a\nb", Span(1, 1), "A") == "A\nb"
    assert replace_span("a\nb", Span(3, 2), "c") == "a\nb\nc"
    # the document keeps its missing final newline, and its CRLF style
    assert replace_span("a\r\nb", Span(3, 2), "c\r\n") == "a\r\nb\r\nc"
    assert replace_span("a\r\nb", Span(3, 2), "c\nd") == "a\r\nb\r\nc\r\nd"
    assert replace_span("a\nb\n", Span(1, 2), "") == ""
    assert replace_span("", Span(1, 0), "new") == "new"
    with pytest.raises(ValueError):
        replace_span("a\n", Span(2, 2), "x")


# ------------------------------------------------------------ overlaps


def test_overlaps():
    assert overlaps(Span(1, 5), Span(5, 9))
    assert not overlaps(Span(1, 4), Span(5, 9))
    assert overlaps(Span(3, 4), Span(1, 9)) and overlaps(Span(1, 9), Span(3, 4))
    # insertion point k (before line k) touches s..e when s <= k <= e + 1
    section = Span(5, 9)
    assert [k for k in range(1, 13) if overlaps(Span(k, k - 1), section)] == [5, 6, 7, 8, 9, 10]
    assert overlaps(section, Span(10, 9))
    assert overlaps(Span(4, 3), Span(4, 3))
    assert not overlaps(Span(4, 3), Span(5, 4))


# ------------------------------------------------------------ conventions


def test_replacement_takes_the_document_conventions():
    from commonroom.conventions import conventions_of

    # the example: LF text into a CRLF document
    text = "## A\r\na\r\n## B\r\nb\r\n"
    assert replace_span(text, resolve(text, {"heading": ["A"]}), "## A\nnew\n") == "## A\r\nnew\r\n## B\r\nb\r\n"
    # the same lines in another style, without BOM or final newline: identical
    assert replace_span(text, Span(1, 4), "\ufeff## A\na\n## B\nb") == text
    # a BOM stays in front of line 1, also when lines are inserted before it or line 1 is deleted
    bom = "\ufeffa\nb\n"
    assert replace_span(bom, Span(1, 0), "z\n") == "\ufeffz\na\nb\n"
    assert replace_span(bom, Span(1, 1), "") == "\ufeffb\n"
    assert replace_span(bom, Span(1, 2), "") == "\ufeff"
    assert replace_span("a\nb\n", Span(1, 1), "\ufeffA\n") == "A\nb\n"
    # no final newline is kept when the last lines are deleted
    assert replace_span("a\nb\nc", Span(3, 3), "") == "a\nb"
    # a document without a line ending takes the text's conventions
    assert replace_span("", Span(1, 0), "x\r\ny\r\n") == "x\r\ny\r\n"
    assert replace_span("one", Span(1, 1), "x\r\ny") == "x\r\ny"
    # mixed: untouched lines keep their endings, equal lines keep theirs, new lines take the dominant style
    mixed = "a\r\nb\nc\r\nd\r\n"
    assert conventions_of(mixed).mixed and conventions_of(mixed).newline == "\r\n"
    assert replace_span(mixed, Span(1, 4), "a\nb\nc\nd\n") == mixed
    assert replace_span(mixed, Span(2, 3), "b\nnew\nc\n") == "a\r\nb\nnew\r\nc\r\nd\r\n"


def test_merge_compares_normalized_lines():
    from commonroom.merge import merge3_text

    base = "a\nb\nc\nd\ne\n"
    ours = "a\r\nb\r\nc\r\nd\r\nE\r\n"  # the whole document in CRLF, one line changed
    theirs = "A\nb\nc\nd\ne\n"
    assert not merge3_text(base, ours, theirs).clean  # as they are: every line changed
    merged = merge3_text(base, ours, theirs, normalize=True, newline="\n")
    assert merged.clean and merged.text == "A\nb\nc\nd\nE\n"
