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

import peewee as pw
from playhouse.sqlite_ext import AutoIncrementField


class JSONField(pw.TextField):
    """JSON stored as compact text."""

    def db_value(self, value):  # noqa: D102 - peewee hook
        return None if value is None else json.dumps(value, separators=(",", ":"), sort_keys=True)

    def python_value(self, value):  # noqa: D102 - peewee hook
        return None if value is None else json.loads(value)


class Models:
    """The sidecar's model classes, bound to one database and to nothing else.

    ``Models(db)`` defines ``Meta``, ``Participant``, ``Invitation``,
    ``Session``, ``Version``, ``Lease``, ``Proposal`` and ``Event`` as new
    classes whose ``_meta.database`` is ``db`` (foreign keys point at the
    sibling classes of the same instance); ``all`` lists them in creation
    order. Building one costs a few class definitions (done once per
    :class:`~commonroom.store.db.Store`). Raises nothing.
    """

    Meta: type[pw.Model]
    Participant: type[pw.Model]
    Invitation: type[pw.Model]
    Session: type[pw.Model]
    Version: type[pw.Model]
    Lease: type[pw.Model]
    Proposal: type[pw.Model]
    Event: type[pw.Model]
    all: tuple[type[pw.Model], ...]

    def __init__(self, db: pw.Database):
        bound = db

        class BaseModel(pw.Model):
            class Meta:
                database = bound
                legacy_table_names = False

        class Meta(BaseModel):
            """Key/value facts about the room: schema_version, workspace_id, ingress."""

            key = pw.TextField(primary_key=True)
            value = pw.TextField()

        class Participant(BaseModel):
            """A person or agent, named by the invitation that admitted them."""

            id = pw.TextField(primary_key=True)
            name = pw.TextField(unique=True)
            created_at = pw.TextField()

        class Invitation(BaseModel):
            """An invitation: single use; the secret is stored only as its hash."""

            id = pw.TextField(primary_key=True)
            secret_hash = pw.TextField(unique=True)
            participant_name = pw.TextField()
            capabilities = JSONField()
            transport = JSONField()
            session_ttl_seconds = pw.IntegerField()
            created_at = pw.TextField()
            expires_at = pw.TextField()
            redeemed_at = pw.TextField(null=True)
            revoked_at = pw.TextField(null=True)
            session_id = pw.TextField(null=True)

        class Session(BaseModel):
            """A redeemed invitation: a bearer (hash only) plus a public id."""

            id = pw.TextField(primary_key=True)
            token_hash = pw.TextField(unique=True)
            participant = pw.ForeignKeyField(Participant, backref="sessions", on_delete="CASCADE")
            invitation_id = pw.TextField()
            capabilities = JSONField()
            client = pw.TextField(null=True)
            created_at = pw.TextField()
            expires_at = pw.TextField(index=True)
            revoked_at = pw.TextField(null=True)

        class Version(BaseModel):
            """Version N of the document and who made it, and how.

            Either ``content`` (a checkpoint: the whole text) or ``delta``
            (one hunk against version N-1: ``{"start": s, "end": e, "lines":
            [...]}``, replace lines s..e, 1-based inclusive) is set; see
            ``commonroom.engine.versions``.
            """

            number = pw.IntegerField(primary_key=True)
            content = pw.TextField(null=True)
            delta = JSONField(null=True)
            content_hash = pw.TextField()
            participant_id = pw.TextField(null=True)
            session_id = pw.TextField(null=True)
            created_at = pw.TextField()
            summary = pw.TextField()
            source = pw.TextField()  # initial | proposal | write | external
            proposal_id = pw.TextField(null=True)

        class Lease(BaseModel):
            """A region reserved for one session until ``expires_at``."""

            id = pw.TextField(primary_key=True)
            session_id = pw.TextField(index=True)
            participant_id = pw.TextField()
            region = JSONField(null=True)
            start_line = pw.IntegerField()
            end_line = pw.IntegerField()
            version = pw.IntegerField()
            acquired_at = pw.TextField()
            expires_at = pw.TextField(index=True)
            released_at = pw.TextField(null=True)
            expired_at = pw.TextField(null=True)

        class Proposal(BaseModel):
            """A replacement of a region as seen at ``base_version``."""

            id = pw.TextField(primary_key=True)
            status = pw.TextField(index=True)  # open | approved | rejected | withdrawn
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

        class Event(BaseModel):
            """One row of the ring (newest 2,000). Ids are AUTOINCREMENT: never reused."""

            id = AutoIncrementField()
            type = pw.TextField()
            created_at = pw.TextField()
            participant_id = pw.TextField(null=True)
            session_id = pw.TextField(null=True)
            payload = JSONField()

        self.Meta, self.Participant, self.Invitation, self.Session = Meta, Participant, Invitation, Session
        self.Version, self.Lease, self.Proposal, self.Event = Version, Lease, Proposal, Event
        self.all = (Meta, Participant, Invitation, Session, Version, Lease, Proposal, Event)


#: The static type of a row of any sidecar model: each store defines its own
#: classes, so engine code annotates rows with this.
Row = pw.Model
