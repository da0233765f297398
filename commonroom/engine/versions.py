"""Versions: the one commit path, storage as checkpoints plus deltas, reads.

DESIGN.md, *Versions*. Each commit makes version N+1 with author, session,
time, summary, content hash and source (``initial``, ``proposal``,
``write``, ``external``). A version stores either the whole text (a
*checkpoint*, compressed: :func:`~commonroom.engine.checkpoints.pack`) or
one hunk against N-1 (``{"start", "end", "lines"}``), so a commit on a 1 MB
document writes only what changed. Checkpoints are spaced by bytes
(:func:`checkpoint_due`): one is written when the hunks since the last one
reach :data:`CHECKPOINT_SHARE` of the text, or number
:data:`CHECKPOINT_HUNKS`, or when the change is most of the text; a
one-line version of a 1 MB document costs a few hundred bytes.

Reading version N starts from the checkpoint below it: its lines (and
their JSON escapes) are kept in bounded caches, filled off the request path
in a room (:mod:`commonroom.engine.checkpoints`), and the hunks after it,
with an anchor every few dozen, in a segment (:mod:`commonroom.engine.segments`).

After the SQLite commit the file on disk follows the head atomically
(:mod:`commonroom.engine.filesync`), then the events are published.
"""

from __future__ import annotations

import json
from typing import Any, Literal, cast, overload

from commonroom.generated.types.editing import Diff, VersionInfo, VersionSource, VersionsPage

from .. import conventions, jsontext, numbers, regions
from ..errors import InvalidRequest, VersionNotFound
from ..merge import unified_diff
from ..store import WriteContext
from ..store.models import Version as VersionRow
from ..store.models import stored_json
from ..store.rows import select_rows
from .base import Actor, EngineBase, Head, content_hash, decode_cursor, encode_cursor, parse_limit, require
from .checkpoints import (PAUSE_SECONDS, CheckpointLines, CheckpointWarmer, encoded_lines, json_line, pack,
                          text_lines, unpack)
from .pieces import EncodedLines, Pieces
from .segments import Segment, Segments

#: Most hunks between two checkpoints (bounds the hunks a segment holds; a read applies
#: at most ``segments.ANCHOR_EVERY - 1`` of them from an anchor).
CHECKPOINT_HUNKS = 1024
#: A checkpoint is due once the hunks since the last one total 1/CHECKPOINT_SHARE of the text
#: (their stored JSON, in characters): a checkpoint then costs about what changed since.
CHECKPOINT_SHARE = 4
#: The columns of a version's info (``VersionInfo`` without ``author``), and the statement reading them.
_INFO_COLUMNS = ("number", "participant_id", "session_id", "created_at", "summary", "content_hash", "source",
                 "proposal_id")
_INFO_SQL = "SELECT " + ", ".join(f'"{column}"' for column in _INFO_COLUMNS) + ' FROM "version" WHERE "number" = ?'
_CACHE_SIZE = 8
#: The newest checkpoint at or below a version (one parameter), either form.
_BASE_SQL = ('SELECT "number" FROM "version" WHERE "number" <= ? AND ("content" IS NOT NULL OR "packed" IS NOT NULL) '
             'ORDER BY "number" DESC LIMIT 1')


def hunk(old: list[str], new: list[str]) -> dict[str, Any]:
    """The single hunk turning ``old`` lines into ``new``: replace ``start..end``.

    Common leading and trailing lines are trimmed; ``end == start - 1`` is a
    pure insertion. ``{"start": int, "end": int, "lines": [str]}`` (1-based).
    """
    prefix, suffix = conventions.common_ends(old, new)
    return {"start": prefix + 1, "end": len(old) - suffix, "lines": new[prefix : len(new) - suffix]}


def checkpoint_due(hunks: int, hunk_bytes: int, delta_size: int, text_size: int) -> bool:
    """Whether the next version is stored whole: spaced by bytes, not by count.

    ``hunks`` and ``hunk_bytes``: the hunks stored since the last checkpoint
    and their stored size (JSON, characters), this version's included;
    ``delta_size``: the characters of this version's new lines; ``text_size``:
    its text's length. Due when the change is more than half the text, when
    the hunks reach :data:`CHECKPOINT_HUNKS`, or when their bytes reach
    ``text_size / CHECKPOINT_SHARE``.
    """
    return (delta_size * 2 > text_size or hunks >= CHECKPOINT_HUNKS
            or hunk_bytes * CHECKPOINT_SHARE >= text_size)


def apply_hunk(lines: list[str], delta: dict[str, Any]) -> list[str]:
    """``lines`` with ``delta`` applied (see :func:`hunk`)."""
    return lines[: delta["start"] - 1] + list(delta["lines"]) + lines[delta["end"] :]


class VersionsMixin(EngineBase):
    """Commit, list, get and diff versions (capability ``read`` for reads)."""

    # -- commit --------------------------------------------------------------

    def _commit(
        self,
        ctx: WriteContext,
        text: str,
        *,
        actor: Actor,
        summary: str,
        source: str,
        proposal_id: str | None = None,
        new_lines: list[str] | None = None,
        delta: dict[str, Any] | None = None,
    ) -> VersionRow:
        """Append version N+1 with ``text`` inside the caller's transaction.

        Emits ``version.committed``; after the commit the head cache moves
        and the file follows (``FileFollower``). ``new_lines`` (the lines of
        ``text``) and ``delta`` (the hunk from the head) may be passed when
        the caller has them. Returns the row. ``StorageUnavailable`` (nothing
        committed) when the file could not take it: it is behind after a
        failed write, or its disk is full (``FileFollower.check_room``).
        """
        Version = self.store.models.Version
        if source != "external":  # an outside edit is on disk already; anything else must reach the file
            self.follower.check_room(len(text))
        head = self.head()
        number = head.number + 1
        digest = content_hash(text)
        old_lines = self.head_lines()
        new_lines = new_lines if new_lines is not None else regions.lines_of(text)
        if delta is None:
            delta = hunk(old_lines, new_lines)
        delta_size = sum(len(line) for line in delta["lines"])
        # a change of most of the text is stored whole: its hunk is not even encoded
        stored = 0 if delta_size * 2 > len(text) else len(stored_json(delta))
        hunks, hunk_bytes = self._chain(head.number)
        checkpoint = checkpoint_due(hunks + 1, hunk_bytes + stored, delta_size, len(text))
        packed = pack(text) if checkpoint else None
        chain = (number, 0, 0) if checkpoint else (number, hunks + 1, hunk_bytes + stored)
        values = dict(
            number=number,
            content=text if checkpoint and packed is None else None,
            packed=packed,
            delta=None if checkpoint else delta,
            content_hash=digest,
            participant_id=actor.participant_id,
            session_id=actor.session_id,
            created_at=self.clock.stamp(),
            summary=summary,
            source=source,
            proposal_id=proposal_id,
        )
        self.store.insert(Version, **values)
        row = Version(**values)
        self._shift_leases(delta, number, old_lines)
        changed = [delta["start"], delta["start"] + len(delta["lines"]) - 1]
        ctx.emit(
            "version.committed",
            {"version": number, "summary": summary, "source": source, "proposal_id": proposal_id,
             "content_hash": digest, "author": actor.participant_name if actor.kind == "session" else None,
             "lines": changed},
            participant_id=actor.participant_id,
            session_id=actor.session_id,
        )

        def follow() -> None:
            self._chain_at = chain
            if checkpoint:
                self._segments().committed(number)
            self._set_head(number, text, digest, new_lines)
            self._remember(number, text)
            self.follower.submit(number, text)
            warmer = self._warmer
            if checkpoint and warmer is not None:
                warmer.submit(number, text, new_lines)

        # the next write of a group commit builds on this version before it is durable
        ctx.on_release.append(lambda: self.store.stage("head", Head(number, text, digest, new_lines)))
        ctx.on_release.append(lambda: self.store.stage("chain", chain))
        ctx.after_commit.append(follow)
        return row

    # -- reading -------------------------------------------------------------

    def _remember(self, number: int, text: str) -> None:
        cache = self._version_cache
        cache[number] = text
        cache.move_to_end(number)
        while len(cache) > _CACHE_SIZE:
            cache.popitem(last=False)

    def version_text(self, number: int) -> str:
        """The whole document at version ``number``; ``VersionNotFound`` if none."""
        head = self.head()
        if number == head.number:
            return head.text
        cache = self._version_cache
        if number in cache:
            return cache[number]
        self._check_number(number)
        text = self._reconstruct(number)
        self._remember(number, text)
        return text

    def _check_number(self, number: int) -> None:
        """``VersionNotFound`` unless ``number`` is a version of this room."""
        head = self.head()
        if not 1 <= number <= head.number:
            raise VersionNotFound(f"there is no version {number}",
                                  details={"version": number, "head_version": head.number},
                                  current_version=head.number)

    def _chain(self, head: int) -> tuple[int, int]:
        """``(hunks stored since the last checkpoint, their stored size)`` at version ``head``.

        Kept per version (staged inside a group commit, like the head);
        read from the sidecar when what is kept is of another version.
        """
        kept = self.store.staged("chain") or self._chain_at
        if kept is not None and kept[0] == head:
            return kept[1], kept[2]
        db = self.store.db
        base = db.execute_sql(_BASE_SQL, (head,)).fetchone()[0]
        count, size = db.execute_sql('SELECT COUNT(*), COALESCE(SUM(LENGTH("delta")), 0) FROM "version" '
                                     'WHERE "number" > ? AND "number" <= ?', (base, head)).fetchone()
        return count, size

    def _segments(self) -> Segments:
        """The stored checkpoints' numbers and the segments read so far (made once)."""
        segments = self._segments_kept
        if segments is None:
            segments = self._segments_kept = Segments(
                lambda sql, params: self.store.db.execute_sql(sql, params).fetchall())
        return segments

    def _committed(self, number: int) -> bool:
        """True when version ``number`` is committed (not only staged in this thread's group commit)."""
        committed = self._head
        return committed is not None and number <= committed.number

    def _reconstruct(self, number: int) -> str:
        """The text of version ``number`` from the sidecar: the nearest checkpoint at or below it, then its hunks.

        The checkpoint's lines come from a :class:`CheckpointLines` (kept in
        memory, bounded; built here on a miss, else by the warmer); the hunks
        from its :class:`Segment`. A version only staged in a group commit is
        replayed from the sidecar and nothing of it is kept.
        """
        if not self._committed(number):
            return self._replayed(number)
        base = self._segments().base_of(number)
        checkpoints = self._checkpoint_cache(False)
        kept = checkpoints.get(base)
        if kept is None:
            content = self._checkpoint_text(base)
            kept = checkpoints.put(base, *text_lines(regions.lines_of(content), len(content)))
        segment = self._segment(base, len(kept), number)
        return segment.pieces(number).join_text(kept, segment.texts)

    def _segment(self, base: int, lines: int, number: int) -> Segment:
        """Checkpoint ``base``'s segment (``lines`` lines), holding the hunks up to ``number``."""
        return self._segments().segment(base, lines, number)

    def _encoded_text(self, number: int, prefix: bytes, suffix: bytes) -> bytes:
        """``prefix``, the JSON string escape of version ``number``'s text (UTF-8, no quotes), ``suffix``.

        The checkpoint's escaped lines are one blob (:class:`EncodedLines`,
        cached like :meth:`_reconstruct`'s lines); the version is the pieces
        of its segment, so the answer is one join of the blob's spans and
        the hunks' lines.
        """
        if not self._committed(number):
            text = self._reconstruct(number)
            return prefix + jsontext.dumps(text).encode("utf-8")[1:-1] + suffix
        base = self._segments().base_of(number)
        checkpoints = self._checkpoint_cache(True)
        kept = checkpoints.get(base)
        if kept is None:
            encoded = encoded_lines(regions.lines_of(self._checkpoint_text(base)))
            kept = checkpoints.put(base, encoded, encoded.size)
        segment = self._segment(base, len(kept), number)
        return segment.pieces(number).join(kept, segment.escaped, prefix, suffix)

    def _replayed(self, number: int) -> str:
        """The text of version ``number`` read from the sidecar alone (nothing cached or kept)."""
        base, deltas = self._replay_plan(number)
        lines = regions.lines_of(self._checkpoint_text(base))
        for delta in deltas:
            lines[delta["start"] - 1 : delta["end"]] = delta["lines"]
        return "".join(lines)

    def _replay_plan(self, number: int) -> tuple[int, list[dict[str, Any]]]:
        """``(the nearest checkpoint at or below version number, the hunks after it up to number, in order)``."""
        db = self.store.db
        base = db.execute_sql(_BASE_SQL, (number,)).fetchone()[0]
        deltas = [json.loads(raw) for (raw,) in db.execute_sql(
            'SELECT "delta" FROM "version" WHERE "number" > ? AND "number" <= ? ORDER BY "number"', (base, number))]
        return base, deltas

    @overload
    def _checkpoint_cache(self, encoded: Literal[False]) -> CheckpointLines[tuple[str, ...]]: ...
    @overload
    def _checkpoint_cache(self, encoded: Literal[True]) -> CheckpointLines[EncodedLines]: ...

    def _checkpoint_cache(self, encoded: bool) -> CheckpointLines[Any]:
        """The cache of checkpoints' text lines, or with ``encoded`` of their JSON escapes (made once)."""
        return self._checkpoints_json if encoded else self._checkpoints

    def _checkpoint_text(self, number: int) -> str:
        """The stored text of checkpoint ``number`` (on the calling thread's connection), either form."""
        content, packed = self.store.db.execute_sql(
            'SELECT "content", "packed" FROM "version" WHERE "number" = ?', (number,)).fetchone()
        if content is not None:
            return content
        if packed is not None:
            return unpack(packed)
        return self._replayed(number)  # no longer stored whole: compacted since its number was looked up

    def warm_checkpoints(self, pause: float = PAUSE_SECONDS) -> CheckpointWarmer:
        """Start keeping checkpoints' lines ready off the request path (the room calls it at startup).

        A :class:`~commonroom.engine.checkpoints.CheckpointWarmer` thread
        fills both checkpoint caches: with the stored checkpoints now,
        newest first while they fit in the caches' bounds, then with each
        checkpoint as it is committed (after the commit, never in the
        writer's transaction), and with the hunks after each stored
        checkpoint and their anchors (:mod:`commonroom.engine.segments`).
        ``pause``: seconds it sleeps between chunks of work (0 while nothing
        is served yet). The thread reads with its own connection, closed
        whenever it goes idle; :meth:`stop_warming` stops it. Returns it.
        """
        segments = self._segments()
        numbers = segments.bases()[::-1]
        head = self.head().number
        ends = dict(zip(numbers, [head, *(n - 1 for n in numbers[:-1])]))

        def ready(number: int, lines: int) -> None:  # the hunks after a stored checkpoint, anchors made
            if number in ends and self._committed(ends[number]):
                segments.segment(number, lines, ends[number]).pieces(ends[number])

        warmer = CheckpointWarmer(self._checkpoint_cache(False), self._checkpoint_cache(True), self._checkpoint_text,
                                  release=self.store.db.close, ready=ready, pause=pause)
        self._warmer = warmer
        warmer.warm_stored(numbers)
        return warmer

    def stop_warming(self) -> None:
        """Stop the checkpoint warmer, if :meth:`warm_checkpoints` started one."""
        warmer, self._warmer = self._warmer, None
        if warmer is not None:
            warmer.close()

    def version_encoded(self, actor: Actor, number: Any) -> tuple[bytes, str]:
        """``(the JSON bytes of version(actor, number), its content hash)``, without encoding the text.

        The bytes equal ``commonroom.wire.dumps(self.version(actor, number))``;
        the text is joined from lines escaped once per checkpoint (an old
        version of a 1 MB document costs a join, not a 1 MB JSON encode).
        Needs ``read``; ``VersionNotFound``.
        """
        require(actor, "read")
        number = _version_number(number)
        self._check_number(number)
        info = self._stored_info(number)
        empty = jsontext.dumps({**info, "text": ""}).encode("utf-8")  # "text" is the last key, as in version()
        return self._encoded_text(number, empty[:-2], b'"}'), info["content_hash"]

    def _stored_info(self, number: int) -> VersionInfo:
        """The info of stored version ``number`` (which exists): one statement, its text and delta not read."""
        row = self.store.db.execute_sql(_INFO_SQL, (number,)).fetchone()
        return self._version_info(VersionRow(**dict(zip(_INFO_COLUMNS, row))))

    def _version_info(self, row: VersionRow) -> VersionInfo:
        return {
            "number": row.number,
            "author": self.participant_name(row.participant_id),
            "participant_id": row.participant_id,
            "session_id": row.session_id,
            "created_at": row.created_at,
            "summary": row.summary,
            "content_hash": row.content_hash,
            "source": cast("VersionSource", row.source),  # the sidecar holds only these
            "proposal_id": row.proposal_id,
        }

    def _changes(self, after: int, upto: int) -> list[dict[str, Any]]:
        """Versions ``after+1 .. upto`` as the ``changes`` recovery field."""
        rows = select_rows(self.store.models.Version, 'WHERE "number" > ? AND "number" <= ? ORDER BY "number"',
                           (after, upto), only=_INFO_COLUMNS)
        out = []
        for row in rows:
            info = self._version_info(row)
            out.append({"version": info["number"], "author": info["author"], "summary": info["summary"],
                        "created_at": info["created_at"], "source": info["source"]})
        return out

    def versions(self, actor: Actor, limit: Any = None, cursor: str | None = None) -> VersionsPage:
        """Newest first, ``editing.json#/$defs/VersionsPage``. Needs ``read``.

        ``limit`` 1 to 200 (default 50) else ``InvalidRequest``.
        """
        require(actor, "read")
        size = parse_limit(limit)
        before = decode_cursor(cursor)
        if before is not None and not isinstance(before, int):
            raise InvalidRequest("cursor is not one this room issued", details={"parameter": "cursor"})
        rows = select_rows(self.store.models.Version,
                           ('WHERE "number" < ? ' if before is not None else "") + 'ORDER BY "number" DESC LIMIT ?',
                           ([before] if before is not None else []) + [size + 1], only=_INFO_COLUMNS)
        page = [self._version_info(r) for r in rows[:size]]
        next_cursor = encode_cursor(rows[size - 1].number) if len(rows) > size else None
        return {"versions": page, "next_cursor": next_cursor}

    def version(self, actor: Actor, number: Any) -> VersionInfo:
        """One version with its ``text``. Needs ``read``; ``VersionNotFound``."""
        require(actor, "read")
        number = _version_number(number)
        text = self.version_text(number)
        return {**self._stored_info(number), "text": text}

    def diff(self, actor: Actor, from_version: Any, to_version: Any = None) -> Diff:
        """Unified diff between two versions (``to`` defaults to the head). Needs ``read``."""
        require(actor, "read")
        if from_version in (None, ""):
            raise InvalidRequest("from is required: the version to diff from",
                                 details={"parameter": "from"})
        a = _version_number(from_version)
        b = self.head().number if to_version in (None, "") else _version_number(to_version)
        text = unified_diff(self.version_text(a), self.version_text(b), f"v{a}", f"v{b}")
        return {"from_version": a, "to_version": b, "diff": text}


def _version_number(value: Any) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str):
        try:
            return numbers.natural(value)
        except numbers.NotANumber:
            pass
    raise InvalidRequest(f"a version is a positive integer, not {value!r}", details={"parameter": "version"})
