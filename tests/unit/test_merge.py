"""commonroom.merge: conformance cases in tests/conformance/merge, plus diffs."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from commonroom.merge import MergeResult, merge3_text, unified_diff
from commonroom.regions import lines_of
from tests.shared_data import CORPUS as SHARED_CORPUS

CASES_DIR = Path(__file__).parents[1] / "conformance" / "merge"
CASES = sorted(CASES_DIR.glob("*.json"))
CORPUS = SHARED_CORPUS


def _load(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def test_enough_cases():
    assert len(CASES) >= 12


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_conformance_case(path: Path):
    case = _load(path)
    result = merge3_text(case["base"], case["ours"], case["theirs"])
    assert isinstance(result, MergeResult)
    if case.get("conflict"):
        assert not result.clean
        assert result.text is None
        assert result.conflicts
        if "conflict_base_lines" in case:
            got = [[c["base_start"], c["base_end"]] for c in result.conflicts]
            assert got == case["conflict_base_lines"]
        base = lines_of(case["base"])
        ours = lines_of(case["ours"])
        theirs = lines_of(case["theirs"])
        for c in result.conflicts:
            assert c["base"] == base[c["base_start"] - 1: c["base_end"]]
            assert c["ours"] == ours[c["ours_start"] - 1: c["ours_end"]]
            assert c["theirs"] == theirs[c["theirs_start"] - 1: c["theirs_end"]]
            assert c["ours"] != c["theirs"]
        # a conflict is a conflict whichever side is "ours"
        assert not merge3_text(case["base"], case["theirs"], case["ours"]).clean
    else:
        assert result.clean, result.conflicts
        assert result.conflicts == []
        assert result.text == case["expected"]
        swapped = merge3_text(case["base"], case["theirs"], case["ours"])
        assert swapped.clean and swapped.text == case["expected"]


def test_cases_are_well_formed():
    names = set()
    for path in CASES:
        case = _load(path)
        assert set(case) >= {"name", "base", "ours", "theirs"}
        assert ("expected" in case) != bool(case.get("conflict"))
        assert case["name"] not in names
        names.add(case["name"])


def test_case_coverage():
    """The catalogue keeps the situations the brief asks for."""
    cases = [_load(p) for p in CASES]
    assert any("\r\n" in c["base"] for c in cases)
    assert any(c["base"] and not c["base"].endswith("\n") for c in cases)
    assert any(c["base"] == "" for c in cases)
    assert any(not c["base"].isascii() for c in cases)
    assert any(c.get("conflict") for c in cases)


@pytest.mark.parametrize("name", sorted(p.name for p in CORPUS.glob("*.md")))
def test_one_sided_changes_on_corpus(name: str):
    text = (CORPUS / name).read_bytes().decode("utf-8")
    lines = lines_of(text)
    edited = list(lines)
    edited[len(lines) // 2] = "an edited line\n"
    edited.insert(3, "an inserted line\n")
    other = "".join(edited)
    assert merge3_text(text, other, text).text == other
    assert merge3_text(text, text, other).text == other
    assert merge3_text(text, other, other).text == other
    assert merge3_text(text, text, text).text == text


def test_large_corpus_disjoint_edits():
    text = (CORPUS / "angular-cli-CHANGELOG.md").read_bytes().decode("utf-8")
    lines = lines_of(text)
    ours, theirs, expected = list(lines), list(lines), list(lines)
    for seq in (ours, expected):
        seq[100] = "ours\n"
        seq[18000] = "ours at the end\n"
    for seq in (theirs, expected):
        seq[9000] = "theirs\n"
        del seq[5000:5010]
    result = merge3_text(text, "".join(ours), "".join(theirs))
    assert result.clean
    assert result.text == "".join(expected)


# ---------------------------------------------------------------- diffs


def test_diff_equal_is_empty():
    assert unified_diff("a\nb\n", "a\nb\n", "a", "b") == ""


def test_diff_shape():
    diff = unified_diff("one\ntwo\nthree\n", "one\n2\nthree\n", "v1", "v2")
    assert diff == "--- v1\n+++ v2\n@@ -1,3 +1,3 @@\n one\n-two\n+2\n three\n"


def test_diff_no_newline_at_end_like_git():
    diff = unified_diff("a\nb", "a\nc", "x", "y")
    assert diff == (
        "--- x\n+++ y\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n"
        "+c\n\\ No newline at end of file\n"
    )
    diff = unified_diff("a\nb", "a\nb\n", "x", "y")
    assert diff == (
        "--- x\n+++ y\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+b\n"
    )


def test_diff_context_and_crlf():
    a = "".join(f"line {i}\r\n" for i in range(1, 21))
    b = a.replace("line 10\r\n", "line ten\r\n")
    diff = unified_diff(a, b, "a", "b", context=1)
    assert diff == "--- a\n+++ b\n@@ -9,3 +9,3 @@\n line 9\r\n-line 10\r\n+line ten\r\n line 11\r\n"


def test_diff_from_and_to_empty():
    assert unified_diff("", "x\n", "a", "b") == "--- a\n+++ b\n@@ -0,0 +1 @@\n+x\n"
    assert unified_diff("x", "", "a", "b") == (
        "--- a\n+++ b\n@@ -1 +0,0 @@\n-x\n\\ No newline at end of file\n"
    )


def test_diff_non_ascii():
    diff = unified_diff("## 目的\n", "## 目标 ✨\n", "a", "b")
    assert "-## 目的\n+## 目标 ✨\n" in diff


def test_normalized_merge_keeps_no_bom_inside_the_document():
    """A line inserted above the first line of a BOM document: the old first line loses its BOM.

    Found by tests/engine/test_conventions.py (a proposal inserting at line 1,
    rebased at approval onto a head changed further down): the head's first
    line was taken byte for byte, BOM included, and landed on line 2.
    """
    base = "\ufeff<a></a>\n\n# T\n\ntext\n"
    ours = "\ufeffnew\n<a></a>\n\n# T\n\ntext\n"
    theirs = "\ufeff<a></a>\n\n# T\n\nnew text\n"
    merged = merge3_text(base, ours, theirs, normalize=True)
    assert merged.text == "new\n<a></a>\n\n# T\n\nnew text\n"  # the caller puts the document's BOM back
