"""The client-side reader of ``text/event-stream`` (WHATWG HTML, "Server-sent events").

One incremental parser for every consumer of an event stream: the byte
client (:func:`commonroom.client.stream`, used by ``ce mcp`` and
``ce observe``) and the tests' SSE helpers. It follows the WHATWG
interpretation rules:

- the stream is UTF-8 (invalid bytes become U+FFFD); one BOM at the very
  start is dropped;
- lines end with CRLF, LF or CR, also when the CR and the LF arrive in
  different chunks;
- a line starting with ``:`` is a comment; ``name: value`` loses one space
  after the colon; a line without a colon is a field with an empty value;
- fields ``event``, ``data`` (several lines join with LF), ``id`` (ignored
  when it contains NUL; the stream's last event id persists across events)
  and ``retry`` (ASCII digits only, else ignored); other fields are ignored;
- a blank line ends a block; a block with at least one ``data`` line is an
  event (type ``message`` unless ``event`` says otherwise);
- a block not ended by a blank line when the stream ends is discarded.

Blocks without data (a ``retry:`` hint, a ``: heartbeat`` comment) are not
events, but the parser still reports them as :class:`Frame` objects whose
:attr:`Frame.is_event` is false, because callers watch heartbeats and retry
hints; use :func:`iter_events` for events only.
"""

from __future__ import annotations

import codecs
import json
import re
from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator

_EOL = re.compile(r"\r\n|\r|\n")
_BOM = "\ufeff"


@dataclass
class Frame:
    """One block of an event stream (ended by a blank line).

    ``event``, ``data``, ``id`` and ``retry`` are the fields as this block
    sent them (``None`` when absent; ``data`` joins its lines with LF);
    ``comments`` are its comment lines without the colon and one leading
    space; ``last_event_id`` is the stream's last event id when the block
    ended (an earlier block's ``id`` when this one has none).
    """

    event: str | None = None
    data: str | None = None
    id: str | None = None
    retry: int | None = None
    comments: list[str] = field(default_factory=list)
    last_event_id: str = ""

    @property
    def is_event(self) -> bool:
        """True when the block dispatches an event (it had a ``data`` line)."""
        return self.data is not None

    @property
    def type(self) -> str:
        """The event type: ``event`` when sent and not empty, else ``message``."""
        return self.event or "message"

    def json(self) -> Any:
        """``data`` parsed as JSON (``None`` without data; ``ValueError`` if not JSON)."""
        return json.loads(self.data) if self.data is not None else None


class SSEParser:
    """Incremental ``text/event-stream`` parser: feed bytes (or text), get frames.

    ``feed`` may be called with chunks cut anywhere (inside a UTF-8
    sequence, between CR and LF); :meth:`close` ends the stream and discards
    an unfinished block. :attr:`last_event_id` and :attr:`retry` keep the
    stream's state (the last ``id`` and ``retry`` seen).
    """

    def __init__(self) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self._start = True
        self._skip_lf = False
        self._partial: list[str] = []
        self.last_event_id = ""
        self.retry: int | None = None
        self._reset_block()

    def _reset_block(self) -> None:
        self._event: str | None = None
        self._data: list[str] = []
        self._id: str | None = None
        self._retry: int | None = None
        self._comments: list[str] = []
        self._has = False

    def feed(self, chunk: bytes | str) -> list[Frame]:
        """Parse one chunk of the stream; returns the blocks it completed, in order."""
        text = self._decoder.decode(chunk) if isinstance(chunk, (bytes, bytearray)) else chunk
        return self._text(text)

    def close(self) -> list[Frame]:
        """End of stream: flush the decoder; an unfinished block is discarded."""
        frames = self._text(self._decoder.decode(b"", final=True))
        self._partial = []
        self._reset_block()
        return frames

    def _text(self, text: str) -> list[Frame]:
        if self._start and text:
            self._start = False
            if text.startswith(_BOM):
                text = text[1:]
        if self._skip_lf and text:
            self._skip_lf = False
            if text.startswith("\n"):
                text = text[1:]
        frames: list[Frame] = []
        pos = 0
        for match in _EOL.finditer(text):
            line = text[pos:match.start()]
            if self._partial:
                self._partial.append(line)
                line = "".join(self._partial)
                self._partial = []
            pos = match.end()
            frame = self._line(line)
            if frame is not None:
                frames.append(frame)
            if pos == len(text) and match.group() == "\r":
                self._skip_lf = True  # a LF at the start of the next chunk ends nothing
        if pos < len(text):
            self._partial.append(text[pos:])
        return frames

    def _line(self, line: str) -> Frame | None:
        if line == "":
            return self._dispatch()
        self._has = True
        if line[0] == ":":
            comment = line[1:]
            self._comments.append(comment[1:] if comment.startswith(" ") else comment)
            return None
        name, colon, value = line.partition(":")
        if colon and value.startswith(" "):
            value = value[1:]
        if name == "data":
            self._data.append(value)
        elif name == "event":
            self._event = value
        elif name == "id":
            if "\0" not in value:
                self._id = value
                self.last_event_id = value
        elif name == "retry":
            if value.isascii() and value.isdigit():
                self._retry = self.retry = int(value)
        return None

    def _dispatch(self) -> Frame | None:
        if not self._has:
            return None
        frame = Frame(event=self._event, data="\n".join(self._data) if self._data else None, id=self._id,
                      retry=self._retry, comments=self._comments, last_event_id=self.last_event_id)
        self._reset_block()
        return frame


def iter_frames(chunks: Iterable[bytes | str]) -> Iterator[Frame]:
    """Every block of a stream given as chunks (bytes or text), as they complete."""
    parser = SSEParser()
    for chunk in chunks:
        yield from parser.feed(chunk)
    yield from parser.close()


def iter_events(chunks: Iterable[bytes | str]) -> Iterator[Frame]:
    """Only the blocks that dispatch an event (those with data)."""
    return (frame for frame in iter_frames(chunks) if frame.is_event)


def parse(body: bytes | str) -> list[Frame]:
    """Every block of a whole stream body (e.g. an event-stream answer read to its end)."""
    return list(iter_frames([body]))
