"""Peewee models of the sidecar (seed protocol.txt, Persistence).

There is no process-global database: :class:`Models` defines the model
classes afresh for one ``pw.Database``, so every
:class:`commonroom.store.db.Store` has its own (``store.models.Version``,
``store.models.Lease``, …) and two stores in one process never share a
binding. Timestamps are RFC 3339 text (UTC, microseconds), so they sort as
strings. JSON columns hold text. Secrets appear only as ``*_hash`` columns
(sha256 hex).
"""

from __future__ import annotations

import json
import unicodedata
from typing import Any

import peewee as pw
from playhouse.sqlite_ext import AutoIncrementField


#: The stored form of a JSON column: compact, keys sorted (one encoder; ``json.dumps``
#: with options builds a new one on every call).
_STORED_JSON = json.JSONEncoder(separators=(",", ":"), sort_keys=True)


def stored_json(value: Any) -> str:
    """``value`` as a JSON column stores it (compact, keys sorted): what ``LENGTH()`` of the column counts."""
    return _STORED_JSON.encode(value)


class JSONField(pw.TextField):
    """JSON stored as compact text."""

    def db_value(self, value: Any) -> str | None:  # noqa: D102 - peewee hook
        return None if value is None else _STORED_JSON.encode(value)

    def python_value(self, value: str | None) -> Any:  # noqa: D102 - peewee hook
        return None if value is None else json.loads(value)


class _Row(pw.Model):
    """The base of the sidecar's model templates: no database of their own."""

    class Meta:
        legacy_table_names = False


class Meta(_Row):
    """Key/value facts about the room: schema_version, workspace_id, ingress."""

    key = pw.TextField(primary_key=True)
    value = pw.TextField()

def participant_key(name: str) -> str:
    """The key that identifies a participant: NFKC, case-folded, NFKC again.

    ``Ana``, ``ana``, ``ANA`` and fullwidth ``ａｎａ`` share the key ``ana``
    (``str.casefold``, so ``Straße`` and ``STRASSE`` share one too). The
    last NFKC keeps the key stable: folding can leave a string that is no
    longer normalized. Pure; raises nothing.
    """
    return unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", name).casefold())


#: Joins a key to a participant id for the later of two participants whose
#: names already normalized alike in a sidecar written before keys existed
#: (schema version 1). No name holds it (control characters are refused),
#: so no invitation can reach those later participants; see ``store.migrations.upgrade``.
DUPLICATE_KEY_SEPARATOR = "\x1f"


class Participant(_Row):
    """A person or agent, named by the invitation that admitted them.

    ``name`` is the name first given; ``name_key`` (:func:`participant_key`
    of it, unique) identifies the participant: an invitation whose name has
    the same key adds a session to this participant.
    """

    id = pw.TextField(primary_key=True)
    name = pw.TextField(unique=True)
    name_key = pw.TextField(unique=True)
    created_at = pw.TextField()

class Invitation(_Row):
    """An invitation: single use; the secret is stored only as its hash."""

    id = pw.TextField(primary_key=True)
    secret_hash = pw.TextField(unique=True)
    participant_name = pw.TextField()  # as the operator typed it (NFC, trimmed)
    participant_key = pw.TextField(index=True)  # participant_key(participant_name)
    capabilities = JSONField()
    transport = JSONField()
    session_ttl_seconds = pw.IntegerField()
    created_at = pw.TextField()
    expires_at = pw.TextField()
    redeemed_at = pw.TextField(null=True)
    revoked_at = pw.TextField(null=True)
    session_id = pw.TextField(null=True)

class Session(_Row):
    """A redeemed invitation: a bearer (hash only) plus a public id."""

    id = pw.TextField(primary_key=True)
    token_hash = pw.TextField(unique=True)
    participant = pw.ForeignKeyField(Participant, backref="sessions", on_delete="CASCADE")
    participant_id: str  # the foreign key's column, as peewee exposes it (no field of its own)
    invitation_id = pw.TextField()
    capabilities = JSONField()
    client = pw.TextField(null=True)
    created_at = pw.TextField()
    expires_at = pw.TextField(index=True)
    revoked_at = pw.TextField(null=True)


def live_session_sql(alias: str = "") -> str:
    """SQL: the session row (``alias``: its table's alias, ``""`` for none) is live, not revoked and not expired.

    One parameter: now, an RFC 3339 stamp (``Clock.stamp()``). The same
    test as :func:`live_session`, for statements written as SQL.
    """
    column = f"{alias}." if alias else ""
    return f'{column}"revoked_at" IS NULL AND {column}"expires_at" > ?'


def live_session(session: Any, now: str) -> pw.Expression:
    """Peewee: ``session`` (the store's ``Session`` model) is live at ``now`` (RFC 3339): see :func:`live_session_sql`."""
    return session.revoked_at.is_null() & (session.expires_at > now)


class Version(_Row):
    """Version N of the document and who made it, and how.

    A *checkpoint* holds the whole text: as ``content`` (text, as every
    checkpoint before schema 10, and a new one when compressing would not
    make it smaller) or as ``packed`` (schema 10: the UTF-8 text compressed
    with zlib, :func:`commonroom.engine.checkpoints.pack`). Any other
    version holds ``delta`` (one hunk against version N-1: ``{"start": s,
    "end": e, "lines": [...]}``, replace lines s..e, 1-based inclusive);
    see ``commonroom.engine.versions``.
    """

    number = pw.IntegerField(primary_key=True)
    content = pw.TextField(null=True)
    packed = pw.BlobField(null=True)
    delta = JSONField(null=True)
    content_hash = pw.TextField()
    participant_id = pw.TextField(null=True)
    session_id = pw.TextField(null=True)
    created_at = pw.TextField()
    summary = pw.TextField()
    source = pw.TextField()  # initial | proposal | write | external
    proposal_id = pw.TextField(null=True)

class Lease(_Row):
    """A region reserved for one session until ``expires_at``."""

    id = pw.TextField(primary_key=True)
    session_id = pw.TextField()  # no index (schema 8): leases are read through ``lease_open``
    participant_id = pw.TextField()
    region = JSONField(null=True)
    start_line = pw.IntegerField()
    end_line = pw.IntegerField()
    version = pw.IntegerField()
    acquired_at = pw.TextField()
    expires_at = pw.TextField()
    released_at = pw.TextField(null=True)
    expired_at = pw.TextField(null=True)

class Proposal(_Row):
    """A replacement of a region as seen at ``base_version``."""

    id = pw.TextField(primary_key=True)
    status = pw.TextField(index=True)  # editing#ProposalStatus
    participant_id = pw.TextField(null=True)
    session_id = pw.TextField(null=True)
    base_version = pw.IntegerField()
    region = JSONField(null=True)
    start_line = pw.IntegerField()
    end_line = pw.IntegerField()
    text = pw.TextField()
    summary = pw.TextField()
    created_at = pw.TextField()
    decided_at = pw.TextField(null=True)
    decided_by = pw.TextField(null=True)
    reason = pw.TextField(null=True)
    committed_version = pw.IntegerField(null=True)
    rebased_from = pw.IntegerField(null=True)

class Event(_Row):
    """One row of the ring (newest 2,000). Ids are AUTOINCREMENT: never reused."""

    id = AutoIncrementField()
    type = pw.TextField()
    created_at = pw.TextField()
    participant_id = pw.TextField(null=True)
    session_id = pw.TextField(null=True)
    payload = JSONField()


class Handoff(_Row):
    """Work one participant asks another to do (DESIGN.md; ``commonroom.engine.handoffs``).

    ``status``: open → accepted → result_ready → approved | rejected;
    cancelled earlier. ``owner_id``/``assignee_id`` are participant ids
    (``"operator"`` for the local operator). ``result`` is the completion's
    text, copied here so it outlives the task row. ``(owner_id,
    idempotency_key)`` is unique; ``request_hash`` fingerprints the request
    a key was first used for.
    """

    id = pw.TextField(primary_key=True)
    status = pw.TextField(index=True)
    summary = pw.TextField()
    constraints = pw.TextField()
    artifacts = JSONField()
    owner_id = pw.TextField()
    owner_session_id = pw.TextField(null=True)
    assignee_id = pw.TextField(null=True)
    idempotency_key = pw.TextField(null=True)
    request_hash = pw.TextField()
    task_id = pw.TextField(unique=True)
    result = pw.TextField(null=True)
    created_at = pw.TextField()
    updated_at = pw.TextField()
    accepted_at = pw.TextField(null=True)
    result_at = pw.TextField(null=True)
    decided_at = pw.TextField(null=True)
    decided_by = pw.TextField(null=True)
    reason = pw.TextField(null=True)

    class Meta:
        indexes = ((("owner_id", "idempotency_key"), True),)


class Task(_Row):
    """The execution record of a handoff (MCP tasks: working ⇄ input_required → completed | failed | cancelled).

    ``result`` (a CallToolResult), ``error`` (a JSON-RPC error object),
    ``input_requests`` (key → request, the outstanding ones) and
    ``input_responses`` (key → answer) are JSON; ``input_seq`` numbers the
    input keys, which are never reused within a task.
    """

    id = pw.TextField(primary_key=True)
    handoff_id = pw.TextField(index=True)
    owner_id = pw.TextField()
    assignee_id = pw.TextField(null=True)
    operation = pw.TextField()
    status = pw.TextField(index=True)
    status_message = pw.TextField(null=True)
    created_at = pw.TextField()
    last_updated_at = pw.TextField()
    ttl_ms = pw.IntegerField()
    poll_interval_ms = pw.IntegerField()
    correlation_id = pw.TextField()
    schema_version = pw.IntegerField()
    result = JSONField(null=True)
    error = JSONField(null=True)
    input_requests = JSONField(null=True)
    input_responses = JSONField(null=True)
    input_seq = pw.IntegerField(default=0)


class HandoffEvent(_Row):
    """A handoff's own copy of each of its events (kept for the handoff's lifetime, past the ring)."""

    event_id = pw.IntegerField(primary_key=True)
    handoff_id = pw.TextField(index=True)
    type = pw.TextField()
    created_at = pw.TextField()
    participant_id = pw.TextField(null=True)
    session_id = pw.TextField(null=True)
    payload = JSONField()


#: The tables added by schema version 3 (``store.migrations.upgrade``).
HANDOFF_TEMPLATES: tuple[type[pw.Model], ...] = (Handoff, Task, HandoffEvent)

class Board(_Row):
    """The message board of one session (``session_id``; the seed's Workflow Session).

    ``revision`` is the board's durable, monotonic message-observation
    revision: every real message-state change takes the next one.
    ``low_watermark`` is the newest revision whose change retention has
    pruned: a cursor below it has lost history. A board row exists from its
    first message; before that the board is at revision 0.
    """

    session_id = pw.TextField(primary_key=True)
    revision = pw.IntegerField(default=0)
    low_watermark = pw.IntegerField(default=0)
    created_at = pw.TextField()


class BoardMessage(_Row):
    """One message on a board (``board_session_id``).

    ``seq`` orders a board's messages by creation (the board revision that
    created it); ``revision`` is the revision of its latest state change.
    A completed todo keeps its completion: ``completion_id`` (derived from
    the caller's key, never the key), ``completion_fence`` (a fingerprint of
    the accepted fence) and ``completion_digest`` (of the answer, tags,
    priority, author and fence); ``replies_pruned`` counts direct replies
    retention removed (its assignment is then incomplete).
    """

    id = pw.TextField(primary_key=True)
    board_session_id = pw.TextField()
    seq = pw.IntegerField()
    revision = pw.IntegerField()
    kind = pw.TextField()
    priority = pw.TextField()
    tags = JSONField()
    body = pw.TextField()
    reply_to = pw.TextField(null=True, index=True)
    requires_ack = pw.BooleanField(default=False)
    status = pw.TextField()  # open | resolved
    resolved_by_message_id = pw.TextField(null=True)
    resolved_at = pw.TextField(null=True)
    participant_id = pw.TextField(null=True)
    author_session_id = pw.TextField(null=True)
    created_at = pw.TextField()
    updated_at = pw.TextField()
    completion_id = pw.TextField(null=True)
    completion_fence = pw.TextField(null=True)
    completion_digest = pw.TextField(null=True)
    replies_pruned = pw.IntegerField(default=0)

    class Meta:
        indexes = (
            (("board_session_id", "seq"), True),
            (("board_session_id", "revision"), False),
        )


class BoardAck(_Row):
    """The first ACK of a ``requires_ack`` message by its recipient session.

    ACK state belongs to the recipient (``session_id``) and the message
    (``message_id``); ``first_acked_at`` is observability only: never a
    delivery, read or acceptance receipt, and it resolves nothing.
    """

    session_id = pw.TextField()
    message_id = pw.TextField()
    first_acked_at = pw.TextField()

    class Meta:
        primary_key = pw.CompositeKey("session_id", "message_id")


class BoardAudit(_Row):
    """One board tool call, metadata only (never a body or a raw completion key).

    ``operation`` and ``outcome`` (``ok`` or the error code); the caller
    (``participant_id``, ``session_id``); the target (``board_session_id``,
    ``message_id``); ``details``: byte and tag counts, correlation ids and
    the completion identity (``cid_…``). The newest
    :data:`commonroom.engine.board_base.AUDIT_ROWS` rows are kept.
    """

    id = pw.AutoField()
    created_at = pw.TextField()
    operation = pw.TextField()
    outcome = pw.TextField()
    participant_id = pw.TextField(null=True)
    session_id = pw.TextField(null=True)
    board_session_id = pw.TextField(null=True)
    message_id = pw.TextField(null=True)
    details = JSONField()


class PeerMessage(_Row):
    """A message from one session to another session of the same participant (a peer).

    ``recipient_session_id`` / ``sender_session_id``; the Session message
    vocabulary (kind, priority, tags, body, ``requires_ack``) without task
    semantics. ``first_projected_at``, ``last_projected_at`` and
    ``projection_count`` record the room's attempts to piggyback it (never a
    delivery or read receipt); ``first_acked_at`` the recipient's first ACK.
    Retained 24 h, at most 200 per recipient.
    """

    id = pw.TextField(primary_key=True)
    recipient_session_id = pw.TextField()
    sender_session_id = pw.TextField()
    participant_id = pw.TextField()
    kind = pw.TextField()
    priority = pw.TextField()
    tags = JSONField()
    body = pw.TextField()
    requires_ack = pw.BooleanField(default=False)
    created_at = pw.TextField(index=True)
    first_projected_at = pw.TextField(null=True)
    last_projected_at = pw.TextField(null=True)
    projection_count = pw.IntegerField(default=0)
    first_acked_at = pw.TextField(null=True)

    class Meta:
        indexes = ((("recipient_session_id", "created_at"), False),)


class PeerSeen(_Row):
    """``peer_awareness`` shown to ``observer_session_id`` about ``peer_session_id`` (dedup; pruned after 24 h)."""

    observer_session_id = pw.TextField()
    peer_session_id = pw.TextField()
    shown_at = pw.TextField()

    class Meta:
        primary_key = pw.CompositeKey("observer_session_id", "peer_session_id")


#: Schema 5: ACK state, the board audit log and peers.
ACK_AUDIT_TEMPLATES: tuple[type[pw.Model], ...] = (BoardAck, BoardAudit, PeerMessage, PeerSeen)

#: The templates, in creation order (a foreign key's target comes first).
TEMPLATES: tuple[type[pw.Model], ...] = (Meta, Participant, Invitation, Session, Version, Lease, Proposal, Event,
                                         *HANDOFF_TEMPLATES, Board, BoardMessage, *ACK_AUDIT_TEMPLATES)


class Models:
    """The sidecar's model classes, bound to one database and to nothing else.

    The classes above are templates: typed, but bound to no database.
    ``Models(db)`` subclasses each of them for ``db`` (same table name; the
    foreign key of ``Session.participant`` points at the sibling
    ``Participant`` of the same instance), so every
    :class:`~commonroom.store.db.Store` has its own classes and two stores
    in one process never share a binding, while engine code keeps the
    templates' static types (``store.models.Lease`` is a ``type[Lease]``).
    ``all`` lists them in creation order. Raises nothing.
    """

    Meta: type[Meta]
    Participant: type[Participant]
    Invitation: type[Invitation]
    Session: type[Session]
    Version: type[Version]
    Lease: type[Lease]
    Proposal: type[Proposal]
    Event: type[Event]
    Handoff: type[Handoff]
    Task: type[Task]
    HandoffEvent: type[HandoffEvent]
    Board: type[Board]
    BoardMessage: type[BoardMessage]
    BoardAck: type[BoardAck]
    BoardAudit: type[BoardAudit]
    PeerMessage: type[PeerMessage]
    PeerSeen: type[PeerSeen]
    all: tuple[type[pw.Model], ...]

    def __init__(self, db: pw.Database):
        bound: dict[str, type[pw.Model]] = {}
        for template in TEMPLATES:
            meta_attrs: dict[str, object] = {"database": db, "table_name": template._meta.table_name}
            if template._meta.indexes:
                meta_attrs["indexes"] = template._meta.indexes
            meta = type("Meta", (), meta_attrs)
            attrs: dict[str, object] = {"Meta": meta, "__module__": __name__, "__doc__": template.__doc__}
            if template is Session:
                attrs["participant"] = pw.ForeignKeyField(bound["Participant"], backref="sessions",
                                                          on_delete="CASCADE")
            bound[template.__name__] = type(template.__name__, (template,), attrs)
        self.Meta = bound["Meta"]  # type: ignore[assignment]
        self.Participant = bound["Participant"]  # type: ignore[assignment]
        self.Invitation = bound["Invitation"]  # type: ignore[assignment]
        self.Session = bound["Session"]  # type: ignore[assignment]
        self.Version = bound["Version"]  # type: ignore[assignment]
        self.Lease = bound["Lease"]  # type: ignore[assignment]
        self.Proposal = bound["Proposal"]  # type: ignore[assignment]
        self.Event = bound["Event"]  # type: ignore[assignment]
        self.Handoff = bound["Handoff"]  # type: ignore[assignment]
        self.Task = bound["Task"]  # type: ignore[assignment]
        self.HandoffEvent = bound["HandoffEvent"]  # type: ignore[assignment]
        self.Board = bound["Board"]  # type: ignore[assignment]
        self.BoardMessage = bound["BoardMessage"]  # type: ignore[assignment]
        self.BoardAck = bound["BoardAck"]  # type: ignore[assignment]
        self.BoardAudit = bound["BoardAudit"]  # type: ignore[assignment]
        self.PeerMessage = bound["PeerMessage"]  # type: ignore[assignment]
        self.PeerSeen = bound["PeerSeen"]  # type: ignore[assignment]
        self.all = tuple(bound[t.__name__] for t in TEMPLATES)


#: The static type of a row of any sidecar model (prefer the template's own type).
Row = pw.Model
