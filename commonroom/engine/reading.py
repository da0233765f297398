"""Reads: room status, the document, participants (seed protocol.txt, HTTP)."""

from __future__ import annotations

from typing import Any

from commonroom.generated.types.room import Document, DocumentOutline, ParticipantsPage, RenderedDocument, RoomStatus

from .. import PROTOCOL, PROTOCOL_VERSION, regions, rendering
from ..clock import rfc3339
from ..store.models import live_session_sql
from .access import participant_dict
from .filesync import epoch_stamp
from .base import Actor, EngineBase, encode_cursor, page_after_stamp_and_id, parse_limit, require


#: ``room_status``'s two counts, one statement (cheaper than peewee's two ``COUNT`` subqueries).
_ROOM_COUNTS = ('SELECT (SELECT COUNT(*) FROM "participant"), '
                f'(SELECT COUNT(*) FROM "session" WHERE {live_session_sql()})')


class ReadingMixin(EngineBase):
    """``room_status``, ``document``, ``participants`` (capability ``read``)."""

    def room_status(self, actor: Actor) -> RoomStatus:
        """``room.json#/$defs/RoomStatus``. Needs ``read``."""
        require(actor, "read")
        participants, sessions = self.store.db.execute_sql(_ROOM_COUNTS, (rfc3339(self.clock.now()),)).fetchone()
        status: RoomStatus = {
            "protocol": PROTOCOL,
            "version": PROTOCOL_VERSION,
            "workspace_id": self.workspace_id,
            "file_name": self.file_name,
            "head_version": self.head().number,
            "participants": participants,
            "sessions": sessions,
            "last_event_id": self.store.last_event_id(),
        }
        behind = self.follower.behind()
        if behind is not None:
            status["file_behind"] = {
                "on_disk": behind["on_disk"], "head": behind["head"], "since": epoch_stamp(behind["since"]),
                "error": behind["error"],
                "message": f"the file is behind: on disk v{behind['on_disk']}, head v{behind['head']}"}
        if actor.kind == "operator":
            listeners = self.transport_listeners()  # type: ignore[attr-defined]  # AccessMixin
            if listeners:
                status["transports"] = listeners
        return status

    def document(self, actor: Actor, region: Any = None) -> Document:
        """The head document or one region of it, ``room.json#/$defs/Document``.

        With ``region`` (``editing.json#/$defs/Region``) the text is that
        region's lines, with ``lines`` (its span at the head) and the
        normalized ``region``; ``content_hash`` is always the whole head's.
        Needs ``read``; raises ``InvalidRegion``.
        """
        require(actor, "read")
        head = self.head()
        if region is None:
            return {"text": head.text, "version": head.number, "content_hash": head.hash}
        span = regions.resolve(head.text, region, line_count=len(self.head_lines()))
        lines = self.head_lines()[span.start - 1 : span.end]
        return {"text": "".join(lines), "version": head.number, "content_hash": head.hash,
                "region": span.region, "lines": [span.start, span.end]}

    def rendered(self, actor: Actor) -> RenderedDocument:
        """The head as HTML for people, ``room.json#/$defs/RenderedDocument``.

        CommonMark through markdown-it-py with raw HTML off
        (:func:`commonroom.rendering.render`): ``html``, the ``headings``
        with their sections' lines and paths, ``version`` and
        ``content_hash`` of the head. Needs ``read``.
        """
        require(actor, "read")
        head = self.head()
        html, headings = rendering.render(head.text)
        return {"version": head.number, "content_hash": head.hash, "html": html,
                "headings": headings}  # type: ignore[typeddict-item]

    def outline(self, actor: Actor) -> DocumentOutline:
        """The head's headings, ``room.json#/$defs/DocumentOutline``: those of :meth:`rendered` without
        the HTML (:func:`commonroom.rendering.outline`). Needs ``read``."""
        require(actor, "read")
        head = self.head()
        headings = rendering.outline(head.text)
        return {"version": head.number, "content_hash": head.hash, "headings": headings}  # type: ignore[typeddict-item]

    def participants(self, actor: Actor, limit: Any = None, cursor: str | None = None) -> ParticipantsPage:
        """A page of participants in join order, ``room.json#/$defs/ParticipantsPage``.

        ``limit`` 1 to 200 (default 50), else ``InvalidRequest``; ``cursor``
        from the previous page's ``next_cursor``. Needs ``read``.
        """
        require(actor, "read")
        size = parse_limit(limit)
        rows = page_after_stamp_and_id(self.store.models.Participant, cursor, size)
        ids = [r.id for r in rows[:size]]
        counts: dict[str, int] = dict(self.store.db.execute_sql(
            f'SELECT "participant_id", COUNT("id") FROM "session" WHERE {live_session_sql()} '
            f'AND "participant_id" IN ({", ".join("?" for _ in ids)}) GROUP BY "participant_id"',
            (rfc3339(self.clock.now()), *ids)).fetchall()) if ids else {}
        page = [participant_dict(r, counts.get(r.id, 0)) for r in rows[:size]]
        next_cursor = (
            encode_cursor([rows[size - 1].created_at, rows[size - 1].id]) if len(rows) > size else None
        )
        return {"participants": page, "next_cursor": next_cursor}
