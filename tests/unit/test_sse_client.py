"""The client-side event-stream parser (commonroom.sse_client) on the WHATWG edge cases."""

from __future__ import annotations

import pytest

from commonroom.sse_client import Frame, SSEParser, iter_events, iter_frames, parse


def _chunked(body: bytes, size: int) -> list[bytes]:
    return [body[i:i + size] for i in range(0, len(body), size)]


def test_fields_and_default_type():
    [frame] = parse(b"id: 7\nevent: version.committed\ndata: {\"a\":1}\nretry: 5000\n\n")
    assert (frame.id, frame.event, frame.data, frame.retry) == ("7", "version.committed", '{"a":1}', 5000)
    assert frame.is_event and frame.type == "version.committed" and frame.json() == {"a": 1}
    [plain] = parse("data: x\n\n")
    assert plain.event is None and plain.type == "message"
    [empty_type] = parse("event:\ndata: x\n\n")
    assert empty_type.type == "message"


def test_multi_line_data_joins_with_lf():
    [frame] = parse("data: one\ndata:two\ndata:  three\ndata\n\n")
    assert frame.data == "one\ntwo\n three\n"


def test_one_space_after_the_colon_and_fields_without_colon():
    [frame] = parse("data:no space\n\n")
    assert frame.data == "no space"
    [frame] = parse("data\n\n")
    assert frame.data == "" and frame.is_event  # an empty data line still dispatches
    [frame] = parse("event\ndata: x\n\n")
    assert frame.event == "" and frame.type == "message"


@pytest.mark.parametrize("eol", ["\n", "\r\n", "\r"])
def test_line_endings(eol):
    body = eol.join(["id: 1", "event: e", "data: a", "data: b", "", "data: c", "", ""])
    frames = parse(body.encode())
    assert [(f.id, f.event, f.data) for f in frames] == [("1", "e", "a\nb"), (None, None, "c")]


def test_mixed_line_endings():
    frames = parse(b"data: a\r\ndata: b\rdata: c\n\r\ndata: d\r\r")
    assert [f.data for f in frames] == ["a\nb\nc", "d"]


@pytest.mark.parametrize("size", [1, 2, 3, 5, 7])
def test_chunks_cut_anywhere(size):
    body = "\ufeffid: 1\r\ndata: Zürich 日本\r\n\r\n: hb\r\rdata: x\r\n\r\n".encode()
    frames = list(iter_frames(_chunked(body, size)))
    assert [(f.id, f.data, f.comments) for f in frames] == [
        ("1", "Zürich 日本", []), (None, None, ["hb"]), (None, "x", [])]


def test_cr_then_lf_in_the_next_chunk_is_one_line_end():
    parser = SSEParser()
    assert parser.feed(b"data: a\r") == []
    assert parser.feed(b"\n") == []  # the LF belongs to the CR: no blank line yet
    [frame] = parser.feed(b"\r\n")
    assert frame.data == "a"
    assert parser.close() == []


def test_bom_only_at_the_start():
    [first, second] = parse("\ufeffdata: a\n\ndata: \ufeffb\n\n".encode())
    assert (first.data, second.data) == ("a", "\ufeffb")
    # a BOM split over chunks is dropped too; a second BOM is not
    frames = list(iter_events([b"\xef", b"\xbb", b"\xbf\xef\xbb\xbfdata: a\n\n"]))
    assert frames == []  # the line's name is "\ufeffdata", an unknown field: the block has no data
    frames = list(iter_frames([b"\xef\xbb", b"\xbfdata: a\n\n"]))
    assert [f.data for f in frames] == ["a"]


def test_comments_and_heartbeats():
    frames = parse(": heartbeat\n\n:\n:  two spaces\ndata: x\n\n")
    assert frames[0] == Frame(comments=["heartbeat"])
    assert not frames[0].is_event
    assert frames[1].comments == ["", " two spaces"] and frames[1].data == "x"
    assert [f.data for f in iter_events([": heartbeat\n\ndata: x\n\n"])] == ["x"]


def test_final_block_without_blank_line_is_discarded():
    assert [f.data for f in parse("data: a\n\ndata: b\n")] == ["a"]
    assert [f.data for f in parse("data: a\n\ndata: b")] == ["a"]
    # a CR as the last byte still ends its line (no LF will follow)
    assert [f.data for f in parse("data: a\r\r")] == ["a"]


def test_id_persists_and_nul_ids_are_ignored():
    parser = SSEParser()
    frames = parser.feed("id: 5\ndata: a\n\ndata: b\n\nid: 6\0x\ndata: c\n\nid\ndata: d\n\n")
    assert [(f.id, f.last_event_id) for f in frames] == [("5", "5"), (None, "5"), (None, "5"), ("", "")]
    assert parser.last_event_id == ""


def test_retry_digits_only():
    parser = SSEParser()
    frames = parser.feed("retry: 5000\n\nretry: 5s\n\nretry: -1\n\nretry: ²\n\nretry:\n\nretry: 10\n\n")
    assert [f.retry for f in frames] == [5000, None, None, None, None, 10]
    assert not any(f.is_event for f in frames)
    assert parser.retry == 10


def test_unknown_fields_are_ignored():
    [frame] = parse("foo: bar\ndata: x\nData: y\n\n")
    assert frame.data == "x"


def test_blank_lines_alone_dispatch_nothing():
    assert parse("\n\n\r\n\r\r") == []


def test_invalid_utf8_becomes_replacement_characters():
    [frame] = parse(b"data: a\xffb\n\n")
    assert frame.data == "a\ufffdb"
    # a multi-byte character cut at the end of the stream is replaced, not raised
    assert list(iter_frames([b"data: a\n\ndata: \xe6\x97"]))[0].data == "a"


def test_json_of_a_frame_without_data_is_none():
    assert Frame(comments=["x"]).json() is None
    with pytest.raises(ValueError):
        Frame(data="not json").json()
