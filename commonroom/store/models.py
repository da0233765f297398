"""Peewee models of the sidecar (seed protocol.txt, Persistence).

All models bind to :data:`database`, a ``DatabaseProxy`` that
:class:`commonroom.store.db.Store` initialises. Timestamps are RFC 3339 text
(UTC, microseconds), so they sort as strings. JSON columns hold text.
Secrets appear only as ``*_hash`` columns (sha256 hex).
"""

from __future__ import annotations

import json

import peewee as pw
from playhouse.sqlite_ext import AutoIncrementField

database = pw.DatabaseProxy()


class JSONField(pw.TextField):
    """JSON stored as compact text."""

    def db_value(self, value):  # noqa: D102 - peewee hook
        return None if value is None else json.dumps(value, separators=(",", ":"), sort_keys=True)

    def python_value(self, value):  # noqa: D102 - peewee hook
        return None if value is None else json.loads(value)


class BaseModel(pw.Model):
    class Meta:
        database = database
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

    Either ``content`` (a checkpoint: the whole text) or ``delta`` (one hunk
    against version N-1: ``{"start": s, "end": e, "lines": [...]}``, replace
    lines s..e, 1-based inclusive) is set; see ``commonroom.engine.versions``.
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


MODELS: list[type[BaseModel]] = [Meta, Participant, Invitation, Session, Version, Lease, Proposal, Event]
