"""Pieces (engine/pieces.py): hunks applied as spans give the same bytes as applying them to a list of lines."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from commonroom.engine.pieces import EncodedLines, Pieces

LINE = st.binary(min_size=0, max_size=6)


@st.composite
def histories(draw) -> tuple[list[bytes], list[tuple[int, int, list[bytes]]]]:
    """A base of lines and a series of valid replacements ``(start, end, lines)`` on it (0-based, end excluded)."""
    base = draw(st.lists(LINE, max_size=30))
    count = len(base)
    edits = []
    for _ in range(draw(st.integers(0, 40))):
        start = draw(st.integers(0, count))
        end = draw(st.integers(start, count))
        lines = draw(st.lists(LINE, max_size=5))
        edits.append((start, end, lines))
        count += len(lines) - (end - start)
    return base, edits


@settings(max_examples=400, deadline=None)
@given(histories(), st.binary(max_size=3), st.binary(max_size=3))
def test_pieces_join_like_a_list_of_lines(history, prefix, suffix):
    base, edits = history
    lines = list(base)
    pieces = Pieces(len(base))
    hunks = []
    for start, end, new in edits:
        lines[start:end] = new
        hunks.append(new)
        pieces.replace(start, end, len(hunks) - 1, len(new))
    assert pieces.join(EncodedLines.of(base), hunks, prefix, suffix) == prefix + b"".join(lines) + suffix
    text = [line.decode("latin-1") for line in base]
    assert pieces.join_text(text, [[x.decode("latin-1") for x in h] for h in hunks]) == b"".join(lines).decode("latin-1")
    assert pieces.copy().join(EncodedLines.of(base), hunks) == b"".join(lines)


def test_encoded_lines_keep_each_line_at_its_offsets():
    encoded = EncodedLines.of([b"a\\n", b"", b"\xe9t\xc3\xa9\\n"])
    assert len(encoded) == 3 and encoded.blob == b"a\\n\xe9t\xc3\xa9\\n"
    assert list(encoded.offsets) == [0, 3, 3, 9] and encoded.size == 9 + 4 * 8


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet=st.sampled_from(list('ab\n\\n"é\t\r\x01\u2028\x85')), max_size=40))
def test_json_lines_in_one_pass_are_each_lines_escape(text):
    from commonroom import regions
    from commonroom.engine.checkpoints import json_line, json_lines

    lines = regions.lines_of(text)
    assert json_lines(lines) == [json_line(line) for line in lines]
