"""Peers (seed ``collaboration-board.txt``, *Window Peer*; DESIGN.md, *Boards: identity*).

A session's peers are the other live sessions of the same participant,
named by opaque ``peer_…`` ids (an HMAC of the session id under the
sidecar's board key) that resolve only inside that participant: a peer id
of another participant is ``peer_not_found``, the same answer as an
unknown one, and reveals nothing. :meth:`PeersMixin.post_peer_message`
stores a message for a peer; :meth:`PeersMixin.project_peers` piggybacks
it on the recipient's next MCP tool result (``requires_ack=false``: once)
or on every result until the recipient ACKs it (``true``), and adds
``peer_awareness`` when another session of the same participant had
meaningful activity (an event it caused) in the last 10 minutes,
deduplicated per observer and peer. Peer messages carry no task
semantics; nothing here reads or writes boards. Retention: 24 h, at most
200 per recipient.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import hmac
from typing import Any

from commonroom.generated.types.boards import PeerActivity, PeersView, ReceivedPeerMessage

from .. import tokens
from ..clock import rfc3339
from ..errors import PeerNotFound
from ..store import WriteContext
from ..store.models import live_session, live_session_sql
from ..store.rows import select_rows
from .base import Actor, EngineBase, require
from .board_base import BoardBase

PEER_PREFIX = "peer_"
#: Retention of peer messages and awareness dedup rows, and the most kept per recipient.
PEER_RETAIN_SECONDS = 24 * 3600
PEER_RETAIN_MESSAGES = 200
#: Activity this recent makes a peer worth a ``peer_awareness`` hint.
AWARENESS_SECONDS = 10 * 60
#: Events that are meaningful activity of their session (joining, revocation and
#: expiry are not: a session that merely connected is no active collaborator).
MEANINGFUL_EVENTS = ("board.message_posted", "board.message_resolved", "lease.acquired", "lease.released",
                     "lease.renewed", "proposal.created", "proposal.approved", "version.committed")
#: Peer messages shown on one tool result (oldest first).
PEER_PIGGYBACK = 20

# The peer part of a tool result, each rule written once as SQL: read by the piggyback (:meth:`PeersMixin._peer_plan`,
# :meth:`PeersMixin._awareness`), by :meth:`PeersMixin.peer_work` and by the one-statement probe of every tool call
# (:mod:`commonroom.engine.piggyback`), which composes them.

#: A peer message still to show its recipient, as a condition on ``"peer_message"`` (parameters: the recipient
#: session, the retention cutoff): not yet projected, or waiting for its ACK.
PEER_TO_SHOW = ('"recipient_session_id" = ? AND "created_at" >= ? AND '
                '(("requires_ack" = 0 AND "projection_count" = 0) OR ("requires_ack" = 1 AND "first_acked_at" IS NULL))')
#: The caller's participant's other live sessions, as a condition on ``"session"`` (parameters: participant,
#: session, now).
_OTHER_LIVE = f'"participant_id" = ? AND "id" != ? AND {live_session_sql()}'
#: The awareness rows of an observer since a cutoff: the peers it was shown (parameters: the observer session,
#: the cutoff).
SEEN_SINCE = '"peer_seen" WHERE "observer_session_id" = ? AND "shown_at" >= ?'
_SEEN = f'SELECT "peer_session_id" FROM {SEEN_SINCE}'


def _active(session: str) -> str:
    """Meaningful activity of ``session`` (an SQL expression) as ``FROM "event" WHERE …`` (parameters: the
    awareness cutoff, then :data:`MEANINGFUL_EVENTS`)."""
    return (f'FROM "event" WHERE "session_id" = {session} AND "created_at" >= ? '
            f'AND "type" IN ({", ".join("?" * len(MEANINGFUL_EVENTS))})')


_PEER_ACTIVE = _active('"session"."id"')
#: Is there a peer message to show, or a peer to make the caller aware of? (:meth:`PeersMixin.peer_work`.)
#: Parameters: :func:`peer_work_parameters`.
PEER_WORK = (f'EXISTS (SELECT 1 FROM "peer_message" WHERE {PEER_TO_SHOW}) OR EXISTS (SELECT 1 FROM "session" '
             f'WHERE {_OTHER_LIVE} AND "id" NOT IN ({_SEEN}) AND EXISTS (SELECT 1 {_PEER_ACTIVE}))')


def peer_work_parameters(session: str, participant: str, now: _dt.datetime) -> tuple[Any, ...]:
    """The parameters of :data:`PEER_WORK` for ``session`` of ``participant`` at ``now``."""
    retain = rfc3339(now - _dt.timedelta(seconds=PEER_RETAIN_SECONDS))
    since = rfc3339(now - _dt.timedelta(seconds=AWARENESS_SECONDS))
    return (session, retain, participant, session, rfc3339(now), session, retain, since, *MEANINGFUL_EVENTS)


class PeersMixin(EngineBase):
    """Peer ids, peer messages and their piggyback."""

    def peer_id_of(self, session_id: str) -> str:
        """The opaque peer id of ``session_id`` (stable for the sidecar)."""
        secret = (self.store.meta("board_token_secret") or "").encode("ascii")
        return PEER_PREFIX + hmac.new(secret, b"peer\x00" + session_id.encode("utf-8"), hashlib.sha256).hexdigest()[:32]

    def _live_peers(self, actor: Actor) -> dict[str, str]:
        """peer id → session id of the caller's participant's other live sessions."""
        if actor.participant_id is None or actor.session_id is None:
            return {}
        Session = self.store.models.Session
        now = self.clock.stamp()
        rows = Session.select(Session.id).where((Session.participant == actor.participant_id)
                                                & (Session.id != actor.session_id) & live_session(Session, now))
        return {self.peer_id_of(r.id): r.id for r in rows}

    def _ago(self, seconds: int) -> str:
        return rfc3339(self.clock.now() - _dt.timedelta(seconds=seconds))

    def post_peer_message(self, actor: Actor, peer_id: str, kind: str, body: str, priority: str | None = None,
                          tags: list[str] | None = None, requires_ack: bool | None = None) -> dict[str, Any]:
        """Store a message for the peer ``peer_id`` of the caller's participant. Needs ``message``.

        ``PeerNotFound`` unless ``peer_id`` names another live session of the
        caller's participant (nothing revealed); ``LimitExceeded`` as for
        board messages.
        """
        require(actor, "message")
        kind, priority, body, tag_list = BoardBase._check_message(kind, priority, body, tags)

        def post(ctx: WriteContext) -> dict[str, Any]:
            recipient = self._live_peers(actor).get(peer_id) if isinstance(peer_id, str) else None
            if recipient is None or actor.session_id is None or actor.participant_id is None:
                raise PeerNotFound("no such peer of your participant", details={"peer_id": peer_id})
            P = self.store.models.PeerMessage
            message_id = tokens.new_id("pmsg_")
            now = self.clock.stamp()
            self.store.insert(P, id=message_id, recipient_session_id=recipient, sender_session_id=actor.session_id,
                              participant_id=actor.participant_id, kind=kind, priority=priority, tags=tag_list,
                              body=body, requires_ack=bool(requires_ack), created_at=now, projection_count=0)
            self._prune_peers(recipient)
            return {"message_id": message_id, "peer_id": peer_id, "kind": kind, "priority": priority,
                    "tags": tag_list, "body": body, "requires_ack": bool(requires_ack), "created_at": now}

        return self.store.write(post)

    def _prune_peers(self, recipient: str) -> int:
        """Keep ``recipient``'s newest :data:`PEER_RETAIN_MESSAGES` peer messages (inside a write); how many went.

        Age (:data:`PEER_RETAIN_SECONDS`) is the room timer's part
        (:meth:`~.retention.RetentionMixin.sweep_board_retention`); until it
        runs, an older message is kept but never shown.
        """
        return int(self.store.db.execute_sql(
            'DELETE FROM "peer_message" WHERE "recipient_session_id" = ? AND "id" NOT IN ('
            'SELECT "id" FROM "peer_message" WHERE "recipient_session_id" = ? '
            'ORDER BY "created_at" DESC, rowid DESC LIMIT ?)', (recipient, recipient, PEER_RETAIN_MESSAGES)).rowcount)

    # -- the piggyback ------------------------------------------------------------
    def _peer_plan(self, actor: Actor, acked: frozenset[str]) -> tuple[list[Any], list[str], dict[str, str]]:
        """(messages to show, ids to ACK now, awareness session → last activity); reads only."""
        if actor.session_id is None or actor.participant_id is None:
            return [], [], {}
        cutoff = self._ago(PEER_RETAIN_SECONDS)
        show = select_rows(self.store.models.PeerMessage, f'WHERE {PEER_TO_SHOW} ORDER BY "created_at", rowid LIMIT ?',
                           (actor.session_id, cutoff, PEER_PIGGYBACK + len(acked)))
        to_ack = [r.id for r in show if r.requires_ack and r.id in acked]
        show = [r for r in show if r.id not in acked][:PEER_PIGGYBACK]
        aware = self._awareness(actor, cutoff)
        return show, to_ack, aware

    def peer_work(self, actor: Actor, acked: frozenset[str]) -> bool:
        """True when :meth:`project_peers` has something to show or record for the caller (a read).

        The hot path (every tool call of a session): plain SQL probes, no
        query building; the full plan is computed only when one hits.
        """
        if actor.session_id is None or actor.participant_id is None:
            return False
        parameters = peer_work_parameters(actor.session_id, actor.participant_id, self.clock.now())
        return bool(self.store.db.execute_sql(f"SELECT {PEER_WORK}", parameters).fetchone()[0])

    def _awareness(self, actor: Actor, cutoff: str, dedup: bool = True) -> dict[str, str]:
        """Peer session → last meaningful activity (plain SQL); with ``dedup``, only peers not yet shown."""
        db = self.store.db
        live = [row[0] for row in db.execute_sql(
            f'SELECT "id" FROM "session" WHERE {_OTHER_LIVE}',
            (actor.participant_id, actor.session_id, self.clock.stamp())).fetchall()]
        if not live:
            return {}
        seen = {row[0] for row in db.execute_sql(_SEEN, (actor.session_id, cutoff)).fetchall()} if dedup else set()
        since = self._ago(AWARENESS_SECONDS)
        out: dict[str, str] = {}
        for sid in live:
            if sid in seen:
                continue
            row = db.execute_sql(f'SELECT MAX("created_at") {_active("?")}', (sid, since, *MEANINGFUL_EVENTS)).fetchone()
            if row and row[0]:
                out[sid] = row[0]
        return out

    def _received_wire(self, row: Any) -> ReceivedPeerMessage:
        """A peer message as its recipient sees it (``boards#ReceivedPeerMessage``)."""
        return {"message_id": row.id, "from_peer_id": self.peer_id_of(row.sender_session_id), "kind": row.kind,
                "priority": row.priority, "tags": list(row.tags or []), "body": row.body,
                "requires_ack": bool(row.requires_ack), "created_at": row.created_at,
                "first_acked_at": row.first_acked_at}

    def _activity_wire(self, aware: dict[str, str]) -> list[PeerActivity]:
        return [{"peer_id": self.peer_id_of(sid), "last_activity_at": at}
                for sid, at in sorted(aware.items(), key=lambda kv: kv[1])]

    def list_session_peers(self, actor: Actor) -> PeersView:
        """The caller's peers with recent activity and the peer messages retained for it. Needs ``read``.

        ``{peers: [{peer_id, last_activity_at}], messages: [ReceivedPeerMessage]}``:
        peers are the other live sessions of the caller's participant with
        meaningful activity in the last :data:`AWARENESS_SECONDS` (the
        ``peer_awareness`` rule, not deduplicated: an explicit read); messages
        are those addressed to the caller's session within retention (24 h,
        at most 200), oldest first, ACKed or not. A read: it records no
        projection and no ACK (those are the MCP piggyback's). The operator
        (no session) has no peers.
        """
        require(actor, "read")
        if actor.session_id is None or actor.participant_id is None:
            return {"peers": [], "messages": []}
        cutoff = self._ago(PEER_RETAIN_SECONDS)
        rows = select_rows(self.store.models.PeerMessage, 'WHERE "recipient_session_id" = ? AND "created_at" >= ? '
                           'ORDER BY "created_at", rowid LIMIT ?', (actor.session_id, cutoff, PEER_RETAIN_MESSAGES))
        return {"peers": self._activity_wire(self._awareness(actor, cutoff, dedup=False)),
                "messages": [self._received_wire(r) for r in rows]}

    def project_peers(self, actor: Actor, acked: frozenset[str]) -> dict[str, Any]:
        """The peer part of a tool result's ``_meta`` (a write: projections, ACKs, awareness dedup).

        ``commonroom/peer_messages``: messages for the caller's session
        (oldest first, at most :data:`PEER_PIGGYBACK`): a ``requires_ack=false``
        one once, a ``requires_ack=true`` one until an echo of its id ACKs
        it (the echo suppresses it and records ``first_acked_at``).
        ``commonroom/peer_awareness``: peers with recent meaningful activity,
        once per observer and peer. Projection timestamps and count are
        attempts, never delivery.
        """

        def project(ctx: WriteContext) -> dict[str, Any]:
            show, to_ack, aware = self._peer_plan(actor, acked)
            now = self.clock.stamp()
            db = self.store.db
            for message_id in to_ack:
                db.execute_sql('UPDATE "peer_message" SET "first_acked_at" = ? WHERE "id" = ? AND '
                               '"first_acked_at" IS NULL', (now, message_id))
            for row in show:
                db.execute_sql('UPDATE "peer_message" SET "first_projected_at" = COALESCE("first_projected_at", ?), '
                               '"last_projected_at" = ?, "projection_count" = "projection_count" + 1 WHERE "id" = ?',
                               (now, now, row.id))
            for sid in aware:
                db.execute_sql('INSERT OR REPLACE INTO "peer_seen" ("observer_session_id", "peer_session_id", '
                               '"shown_at") VALUES (?, ?, ?)', (actor.session_id, sid, now))
            out: dict[str, Any] = {}
            if show:
                out["commonroom/peer_messages"] = [self._received_wire(r) for r in show]
            if aware:
                out["commonroom/peer_awareness"] = self._activity_wire(aware)
            return out

        return self.store.write(project)
