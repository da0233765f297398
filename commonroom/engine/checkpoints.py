"""The checkpoints old versions are read from: bounded caches of their lines, warmed off the request path.

Reading version N applies the hunks after the checkpoint below it to that
checkpoint's lines (:mod:`commonroom.engine.versions`, from an anchor of
its segment: :mod:`commonroom.engine.segments`). Two
:class:`CheckpointLines` keep those lines: the text lines (``version_text``)
and their JSON escapes as one blob (:class:`~commonroom.engine.pieces.EncodedLines`,
for ``version_encoded``, the HTTP answer of an old version). Building them
costs about 2 ms (split) and 10 ms (escape) for a 1 MB checkpoint, too much
for a read; :class:`CheckpointWarmer` builds them
on a background thread instead, for every checkpoint as it is committed
and, at startup, for the stored ones (newest first, as many as fit).
"""

from __future__ import annotations

import logging
import threading
import time
import zlib
from collections import OrderedDict, deque
from json.encoder import encode_basestring
from typing import Any, Callable, Generic, TypeVar

from .. import regions
from .pieces import OFFSET_BYTES, EncodedLines

log = logging.getLogger("commonroom.engine")

Kept = TypeVar("Kept")

#: Most memory the checkpoints' text lines kept for reconstruction may take
#: (estimated: text bytes plus :data:`LINE_OVERHEAD` per line).
CHECKPOINT_CACHE_BYTES = 32 * 1024 * 1024
#: The same bound for their JSON-escaped lines, one blob per checkpoint counted exactly
#: (:attr:`EncodedLines.size`; old versions answered over HTTP): 64 MB holds the ~56
#: checkpoints of the 963 KB changelog's first ~3,500 versions (1.14 MB each).
CHECKPOINT_JSON_CACHE_BYTES = 64 * 1024 * 1024
#: Estimated bytes a line costs beyond its text (a str object and a list slot).
LINE_OVERHEAD = 64
#: Lines the warmer escapes between two pauses (about 0.5 ms of work).
CHUNK_LINES = 1000
#: Characters of text the warmer splits into lines between two pauses (about 0.2 ms).
PIECE_CHARS = 64 * 1024
#: Seconds the warmer sleeps between chunks, so the event loop waits at most one chunk for the GIL.
PAUSE_SECONDS = 0.0002
#: Most committed checkpoints waiting for the warmer (older ones are dropped: read cold if ever).
PENDING = 4


#: zlib's level for stored checkpoints: 6 (its default) packs the 963 KB corpus changelog
#: to 175 KB in ~15 ms on the writer (level 1: 205 KB in ~7 ms; 9: 172 KB in ~190 ms); unpacking
#: takes ~3 ms (best of 5 on the bench VM; several times that when it is loaded).
PACK_LEVEL = 6


def pack(text: str) -> bytes | None:
    """``text`` (UTF-8) compressed with zlib, for ``version.packed``; None when that is not smaller."""
    raw = text.encode("utf-8")
    packed = zlib.compress(raw, PACK_LEVEL)
    return packed if len(packed) < len(raw) else None


def unpack(packed: bytes) -> str:
    """The text :func:`pack` compressed."""
    return zlib.decompress(packed).decode("utf-8")


def json_line(line: str) -> bytes:
    """``line`` as it appears inside a JSON string (``jsontext.dumps``: non-ASCII kept), UTF-8."""
    return encode_basestring(line)[1:-1].encode("utf-8")


def json_lines(lines: list[str]) -> list[bytes]:
    """:func:`json_line` of each of ``lines`` (whole lines, as ``regions.lines_of`` cuts them).

    Lines ending in ``"\n"`` alone, with no backslash (the usual case) are
    escaped in one pass and cut at the escaped newlines (about twice as
    fast as line by line); anything else line by line.
    """
    text = "".join(lines)
    if "\\" in text or "\r" in text or any(c in text for c in regions.EXTRA_BREAK_CHARS):
        return [json_line(line) for line in lines]
    parts = encode_basestring(text)[1:-1].encode("utf-8").split(b"\\n")
    out = [part + b"\\n" for part in parts[:-1]]
    if parts[-1]:
        out.append(parts[-1])
    return out if len(out) == len(lines) else [json_line(line) for line in lines]


def entry_size(text_bytes: int, lines: int) -> int:
    """The estimated bytes of a cached checkpoint: its text plus :data:`LINE_OVERHEAD` per line."""
    return text_bytes + LINE_OVERHEAD * lines


class CheckpointLines(Generic[Kept]):
    """A bounded LRU of checkpoints' lines, by checkpoint number: a tuple of text lines, or :class:`EncodedLines`.

    Both forms are immutable (callers copy) and hold no object the garbage
    collector tracks after its first look: tuples of ``str`` are untracked,
    so full collections do not walk the cached lines (with lists, a full
    pass over 16 cached 1 MB checkpoints took ~44 ms instead of ~26 ms).

    Reading an old version applies hunks on its checkpoint's lines; keeping those lines avoids reading and
    splitting a whole text per read. Bounded by ``limit`` bytes, each entry
    counted at the size its caller states (:func:`entry_size` for text
    lines, :attr:`EncodedLines.size`); an entry larger than ``limit`` is
    used once and not kept. Safe from any thread: an entry is put once whole.
    """

    def __init__(self, limit: int = CHECKPOINT_CACHE_BYTES):
        self.limit = limit
        self.held = 0
        self._entries: OrderedDict[int, tuple[Kept, int]] = OrderedDict()
        self._lock = threading.Lock()

    def __contains__(self, number: int) -> bool:
        """True when checkpoint ``number`` is kept (its recency unchanged)."""
        with self._lock:
            return number in self._entries

    def get(self, number: int) -> Kept | None:
        """The lines of checkpoint ``number`` (made most recent), or None."""
        with self._lock:
            entry = self._entries.get(number)
            if entry is None:
                return None
            self._entries.move_to_end(number)
            return entry[0]

    def fits(self, size: int) -> bool:
        """True when an entry of ``size`` bytes is kept without dropping another."""
        with self._lock:
            return self.held + size <= self.limit

    def put(self, number: int, kept: Kept, size: int) -> Kept:
        """Keep ``kept`` (``size`` bytes) as checkpoint ``number``'s if it fits (least recent dropped); returns it."""
        if size > self.limit:
            return kept
        with self._lock:
            if number not in self._entries:
                self._entries[number] = (kept, size)
                self.held += size
            while self.held > self.limit:
                _, (_, dropped) = self._entries.popitem(last=False)
                self.held -= dropped
        return kept


def text_lines(lines: list[str], text_chars: int) -> tuple[tuple[str, ...], int]:
    """``(lines as a tuple, its entry size)``: what :class:`CheckpointLines` keeps of text lines."""
    return tuple(lines), entry_size(text_chars, len(lines))


def encoded_lines(lines: list[str]) -> EncodedLines:
    """The JSON escapes of ``lines`` as one blob (:class:`~commonroom.engine.pieces.EncodedLines`)."""
    return EncodedLines.of(json_lines(lines))


class _Closed(Exception):
    """The warmer was closed while building an entry."""


class CheckpointWarmer:
    """Fills ``plain`` and ``encoded`` (:class:`CheckpointLines`) from one background thread.

    :meth:`submit` hands over a checkpoint just committed (its lines are
    kept, pushing out the least recent); :meth:`warm_stored` the stored
    checkpoints, newest first, each kept only while it fits without
    dropping another (so the bounds of the two caches hold, and a full
    cache stops the startup warming). Committed checkpoints go first.

    Work is done in chunks (:data:`PIECE_CHARS`, :data:`CHUNK_LINES`) with
    a pause (:data:`PAUSE_SECONDS`) after each, so the event loop serving
    reads waits at most one chunk for the GIL. An entry is put only once
    whole. ``pause`` may be changed while the thread runs (the room warms
    with no pause before it serves, then with :data:`PAUSE_SECONDS`).
    ``load(number) -> str`` reads a stored checkpoint's text (on
    this thread); ``ready(number, lines)`` (if given) is called on this
    thread once a stored checkpoint's lines are kept (the engine loads the
    hunks after it: :mod:`commonroom.engine.segments`); ``release()`` is
    called on this thread when it goes idle after loading (to close its
    database connection). At most
    :data:`PENDING` committed checkpoints wait (the oldest is dropped).
    """

    def __init__(self, plain: CheckpointLines[tuple[str, ...]], encoded: CheckpointLines[EncodedLines],
                 load: Callable[[int], str], *,
                 release: Callable[[], Any] | None = None, pause: float = PAUSE_SECONDS,
                 ready: Callable[[int, int], Any] | None = None):
        self.plain = plain
        self.encoded = encoded
        self.load = load
        self.release = release
        self.ready = ready
        self.pause = pause
        self._cond = threading.Condition()
        self._fresh: deque[tuple[int, str, list[str]]] = deque(maxlen=PENDING)
        self._stored: deque[int] = deque()
        self._busy = False
        self._closed = False
        self._thread = threading.Thread(target=self._run, name="commonroom-checkpoints", daemon=True)
        self._thread.start()

    def submit(self, number: int, text: str, lines: list[str]) -> None:
        """Checkpoint ``number`` (``text``, its ``lines``, never mutated) was committed: keep its lines."""
        with self._cond:
            self._fresh.append((number, text, lines))
            self._cond.notify_all()

    def warm_stored(self, numbers: list[int]) -> None:
        """Warm the stored checkpoints ``numbers`` in this order while they fit (pass newest first)."""
        with self._cond:
            self._stored.extend(numbers)
            self._cond.notify_all()

    def wait(self, timeout: float | None = None) -> bool:
        """Wait until nothing is left to warm; False on timeout."""
        with self._cond:
            return self._cond.wait_for(
                lambda: self._closed or not (self._busy or self._fresh or self._stored), timeout)

    def close(self) -> None:
        """Stop the thread (an entry being built is dropped) and wait for it (at most 10 s)."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        self._thread.join(10)

    def _run(self) -> None:
        loaded = False  # a stored checkpoint was loaded since the last release()
        try:
            while True:
                with self._cond:
                    idle = not (self._fresh or self._stored)
                if loaded and idle:
                    self._release()
                    loaded = False
                with self._cond:
                    while not (self._fresh or self._stored or self._closed):
                        self._cond.wait()
                    if self._closed:
                        return
                    job = self._fresh.popleft() if self._fresh else self._stored.popleft()
                    self._busy = True
                try:
                    if isinstance(job, int):
                        loaded = True
                        if not self._warm(job, None, None, keep_others=True):
                            with self._cond:
                                self._stored.clear()  # full: the older checkpoints are read cold
                        elif self.ready is not None:
                            kept = self.encoded.get(job)
                            if kept is not None:
                                self.ready(job, len(kept))
                    else:
                        self._warm(*job, keep_others=False)
                except _Closed:
                    return
                except Exception:  # never the room's failure: that checkpoint is read cold
                    log.exception("warming checkpoint %s failed", job if isinstance(job, int) else job[0])
                finally:
                    with self._cond:
                        self._busy = False
                        self._cond.notify_all()
        finally:
            if loaded:
                self._release()

    def _release(self) -> None:
        try:
            if self.release is not None:
                self.release()
        except Exception:
            log.exception("releasing the checkpoint warmer's resources failed")

    def _warm(self, number: int, text: str | None, lines: list[str] | None, *, keep_others: bool) -> bool:
        """Put checkpoint ``number``'s lines (``text`` None: loaded) in both caches.

        False when ``keep_others`` and the JSON lines do not fit without dropping another entry.
        """
        if number in self.plain and number in self.encoded:
            return True
        if text is None:
            text = self.load(number)
        if lines is None:
            lines = self._split(text)
        size = entry_size(len(text), len(lines))
        if number not in self.plain and (not keep_others or self.plain.fits(size)):
            self.plain.put(number, *text_lines(lines, len(text)))
        if number in self.encoded:
            return True
        if keep_others and not self.encoded.fits(len(text) + OFFSET_BYTES * (len(lines) + 1)):
            return False
        encoded = self._escape(lines)
        if keep_others and not self.encoded.fits(encoded.size):
            return False
        self.encoded.put(number, encoded, encoded.size)
        return True

    def _split(self, text: str) -> list[str]:
        """``regions.lines_of(text)``, a piece (cut after a ``"\\n"``) at a time."""
        lines: list[str] = []
        start = 0
        while start < len(text):
            cut = text.find("\n", start + PIECE_CHARS)
            end = len(text) if cut < 0 else cut + 1
            lines += regions.lines_of(text[start:end])
            start = end
            self._breathe()
        return lines

    def _escape(self, lines: list[str]) -> EncodedLines:
        """:func:`encoded_lines` of ``lines``, escaped :data:`CHUNK_LINES` at a time."""
        out: list[bytes] = []
        for i in range(0, len(lines), CHUNK_LINES):
            out += json_lines(lines[i : i + CHUNK_LINES])
            self._breathe()
        return EncodedLines.of(out)

    def _breathe(self) -> None:
        if self._closed:
            raise _Closed
        if self.pause:
            time.sleep(self.pause)
