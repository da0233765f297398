"""Invitations, joining, sessions and authentication (seed protocol.txt, Invitation).

- ``invite`` makes a single-use invitation; the secret is returned once inside
  the token and stored only as a hash.
- ``join`` redeems it: expired, revoked and redeemed are each their own 403.
- ``authenticate`` turns a bearer into an :class:`Actor`: missing or unknown is
  ``unauthorized``, past its TTL ``session_expired``; revoked stops at once.
"""

from __future__ import annotations

import datetime as _dt
from typing import Any

import json
import unicodedata

import peewee as pw

from .. import PROTOCOL, PROTOCOL_VERSION, invitation, tokens
from ..transport_hints import hint as transport_hint
from ..transport_hints import invitation_address
from ..clock import parse_rfc3339, rfc3339
from ..errors import (
    InvalidRequest,
    InvitationExpired,
    InvitationRedeemed,
    InvitationRevoked,
    NotFound,
    SessionExpired,
    Unauthorized,
)
from commonroom.generated.types.common import Capability
from commonroom.generated.types.common import Participant as ParticipantWire
from commonroom.generated.types.common import Session as SessionWire
from commonroom.generated.types.join import JoinResult
from commonroom.generated.types.owner import InviteResult, RevokeResult

from ..store import WriteContext
from ..store.models import Participant as ParticipantRow
from ..store.models import participant_key
from ..store.models import Session as SessionRow
from ..store.rows import row_by_id
from .base import Actor, EngineBase

DEFAULT_INVITATION_TTL = 24 * 3600
DEFAULT_SESSION_TTL = 30 * 24 * 3600


#: Unicode categories a name may not contain: controls, format characters
#: (bidi overrides, zero-width), surrogates, private use, unassigned, and
#: line/paragraph separators. They would let a name forge or hide text.
_FORBIDDEN_CATEGORIES = {"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"}


def participant_name(raw: str) -> str:
    """A participant name as stored: NFC-normalized, trimmed, printable.

    Raises ``InvalidRequest`` (pointer ``/participant``) for an empty name or
    one holding control, format (bidi, zero-width) or separator characters.
    """
    name = unicodedata.normalize("NFC", raw).strip()
    if not name:
        raise InvalidRequest("participant name is empty", details={"pointer": "/participant"})
    bad = sorted({f"U+{ord(c):04X}" for c in name if unicodedata.category(c) in _FORBIDDEN_CATEGORIES})
    if bad:
        raise InvalidRequest(
            "participant name holds control or invisible characters: " + ", ".join(bad[:5]),
            details={"pointer": "/participant", "characters": bad[:20]},
        )
    return name


def participant_dict(row: ParticipantRow, sessions: int | None = None) -> ParticipantWire:
    """Wire form (schema ``common.json#/$defs/Participant``)."""
    out: ParticipantWire = {"id": row.id, "name": row.name, "created_at": row.created_at}
    if sessions is not None:
        out["sessions"] = sessions
    return out


def session_dict(row: SessionRow, participant: ParticipantRow | None = None) -> SessionWire:
    """Wire form (schema ``common.json#/$defs/Session``); never the token.

    ``participant``: the session's participant row when the caller has it
    (else it is loaded through the foreign key).
    """
    return {
        "id": row.id,
        "participant": participant_dict(participant if participant is not None else row.participant),
        "capabilities": list(row.capabilities),
        "created_at": row.created_at,
        "expires_at": row.expires_at,
        "revoked_at": row.revoked_at,
    }


class AccessMixin(EngineBase):
    """Invitations, sessions and bearer authentication."""

    def invite(
        self,
        participant: str,
        capabilities: list[Capability],
        transport: str = "loopback",
        *,
        expires_in_seconds: int = DEFAULT_INVITATION_TTL,
        session_ttl_seconds: int = DEFAULT_SESSION_TTL,
        address: str | None = None,
    ) -> InviteResult:
        """Create an invitation; returns ``owner.json#/$defs/InviteResult``.

        ``transport`` names the transport whose hint (``transport.json``) goes
        into the token; ``address`` (a plugin transport only) replaces the
        listener's address in it by a name the room answers to (the
        listener's address or one of ``ce serve --allow-host``), else
        ``InvalidRequest``. Operator only (the owner port or the local CLI).
        A participant is identified by :func:`participant_key` of the name
        (NFKC, case-folded): the invitation goes to the participant of that
        key, and the answer's ``participant`` is the name it is shown by
        (the name first given, :meth:`_shown_name`), which may differ from
        ``participant`` in case or width.
        Raises ``InvalidRequest`` for an empty name or a token over 8192
        bytes, ``TransportUnavailable`` for a transport the room lacks.
        """
        Invitation = self.store.models.Invitation
        name = participant_name(participant)
        key = participant_key(name)
        caps = sorted(set(capabilities), key=capabilities.index)
        hint = transport_hint(transport, self.ingress())
        if address is not None:
            hint = {**hint, "address": invitation_address(transport, hint, address, self.ingress())}
        secret = tokens.new_secret(tokens.INVITATION_PREFIX)
        expires_at = self.clock.after(expires_in_seconds)
        token = invitation.encode(
            {
                "capabilities": caps,
                "expires_at": expires_at,
                "protocol": PROTOCOL,
                "secret": secret,
                "transport": hint,
                "version": PROTOCOL_VERSION,
                "workspace_id": self.workspace_id,
            }
        )
        invitation_id = tokens.new_id("inv_")

        def create(ctx: WriteContext) -> str:
            shown = self._shown_name(key) or name
            Invitation.create(
                id=invitation_id,
                secret_hash=tokens.digest(secret),
                participant_name=name,
                participant_key=key,
                capabilities=caps,
                transport=hint,
                session_ttl_seconds=session_ttl_seconds,
                created_at=self.clock.stamp(),
                expires_at=expires_at,
            )
            ctx.emit(
                "invitation.created",
                {"invitation_id": invitation_id, "participant": shown, "capabilities": caps,
                 "expires_at": expires_at},
            )
            return shown

        shown = self.store.write(create)
        return {
            "invitation_id": invitation_id,
            "token": token,
            "participant": shown,
            "capabilities": caps,
            "expires_at": expires_at,
        }

    def _shown_name(self, key: str) -> str | None:
        """The name a participant of ``key`` is shown by: the name first given.

        That is the existing participant's name, else the name of the
        earliest invitation for ``key`` that was not revoked (None: no such
        invitation yet). Call inside a write.
        """
        models = self.store.models
        Participant, Invitation = models.Participant, models.Invitation
        found = Participant.get_or_none(Participant.name_key == key)
        if found is not None:
            return found.name
        first = (Invitation.select(Invitation.participant_name)
                 .where((Invitation.participant_key == key) & Invitation.revoked_at.is_null())
                 .order_by(Invitation.created_at, pw.SQL("rowid")).first())  # rowid: insertion order
        return first.participant_name if first is not None else None

    def ingress(self) -> dict[str, Any] | None:
        """The room's ingress listener as last recorded by ``ce serve``.

        A transport plugin's listener whose address this room process saw
        go (:meth:`listener_gone`) carries ``"gone_since": <timestamp>``.
        """
        raw = self.store.meta("ingress")
        if not raw:
            return None
        ingress: dict[str, Any] = json.loads(raw)
        gone = self.__dict__.get("_listeners_gone") or {}
        for name, listener in (ingress.get("transports") or {}).items():
            if name in gone:
                listener["gone_since"] = gone[name]
        return ingress

    def listener_gone(self, transport: str, gone: bool) -> None:
        """Mark the ``transport`` plugin listener's address gone (now) or back (``commonroom.listenwatch``).

        Kept in this process's memory only (a restarted room checks its
        address anew); thread-safe (the dict is replaced, never changed).
        """
        current = dict(self.__dict__.get("_listeners_gone") or {})
        if gone:
            current.setdefault(transport, self.clock.stamp())
        else:
            current.pop(transport, None)
        self.__dict__["_listeners_gone"] = current

    def transport_listeners(self) -> list[dict[str, Any]]:
        """``room.json#/$defs/TransportListener`` of each plugin listener: where, and whether it listens."""
        found = []
        for name, listener in sorted(((self.ingress() or {}).get("transports") or {}).items()):
            entry = {"type": name, "address": listener["address"], "port": listener["port"],
                     "interface": listener.get("interface", ""), "listening": "gone_since" not in listener}
            if "gone_since" in listener:
                entry["gone_since"] = listener["gone_since"]
            found.append(entry)
        return found

    def set_ingress(self, ingress: dict[str, Any], owner_port: int | None = None) -> None:
        """Record the ingress listener (``{"host", "port"[, "socket"][, "transports"]}``) and the owner port.

        ``ce serve`` records them at each start; the next start without
        ports comes back on them (:func:`commonroom.server.remembered_ports`).
        """
        def record(ctx: WriteContext) -> None:
            self.store.set_meta("ingress", json.dumps(ingress, sort_keys=True))
            if owner_port is not None:
                self.store.set_meta("owner_port", str(owner_port))

        self.store.write(record)

    def join(self, token: str, client: str | None = None) -> JoinResult:
        """Redeem ``token`` (single use) and open a session.

        Returns ``join.json#/$defs/JoinResult`` with the bearer (shown once).
        The session belongs to the participant whose key the invitation's
        name has; the first redemption for a key creates it
        (``participant.joined``), shown by the name first given.
        Raises ``InvalidRequest`` / ``UnsupportedVersion`` for a broken token,
        ``Unauthorized`` for one this room never issued, and
        ``InvitationExpired`` / ``InvitationRevoked`` / ``InvitationRedeemed``.
        """
        models = self.store.models
        Participant, Invitation, Session = models.Participant, models.Invitation, models.Session
        payload = invitation.decode(token)
        if payload["workspace_id"] != self.workspace_id:
            raise Unauthorized("this invitation is for another workspace",
                               details={"reason": "workspace_mismatch"})
        secret_hash = tokens.digest(payload["secret"])
        bearer = tokens.new_secret(tokens.SESSION_PREFIX)
        session_id = tokens.new_id("s_")

        def redeem(ctx: WriteContext) -> SessionRow:
            row = Invitation.get_or_none(Invitation.secret_hash == secret_hash)
            if row is None or not tokens.matches(payload["secret"], row.secret_hash):
                raise Unauthorized("this room did not issue that invitation",
                                   details={"reason": "unknown_invitation"})
            now = self.clock.now()
            if row.revoked_at:
                raise InvitationRevoked("the invitation was revoked",
                                        details={"invitation_id": row.id, "revoked_at": row.revoked_at})
            if row.redeemed_at:
                raise InvitationRedeemed("the invitation was already used",
                                         details={"invitation_id": row.id, "redeemed_at": row.redeemed_at})
            if parse_rfc3339(row.expires_at) <= now:
                raise InvitationExpired("the invitation expired",
                                        details={"invitation_id": row.id, "expires_at": row.expires_at})
            stamp = rfc3339(now)
            participant = Participant.get_or_none(Participant.name_key == row.participant_key)
            if participant is None:
                participant = Participant.create(
                    id=tokens.new_id("p_"), name=self._shown_name(row.participant_key) or row.participant_name,
                    name_key=row.participant_key, created_at=stamp,
                )
                ctx.emit("participant.joined", {"participant": participant_dict(participant)},
                         participant_id=participant.id)
            session = Session.create(
                id=session_id,
                token_hash=tokens.digest(bearer),
                participant=participant,
                invitation_id=row.id,
                capabilities=list(row.capabilities),
                client=client,
                created_at=stamp,
                expires_at=rfc3339(now + _dt.timedelta(seconds=row.session_ttl_seconds)),
            )
            row.redeemed_at = stamp
            row.session_id = session_id
            row.save()
            ctx.emit(
                "session.opened",
                {"session_id": session_id, "participant": participant.name,
                 "capabilities": list(row.capabilities), "invitation_id": row.id},
                participant_id=participant.id,
                session_id=session_id,
            )
            return session

        session = self.store.write(redeem)
        return {
            "token": bearer,
            "session": session_dict(session),
            "workspace_id": self.workspace_id,
            "file_name": self.file_name,
        }

    def authenticate(self, bearer: str | None, digest: str | None = None) -> Actor:
        """The :class:`Actor` for a bearer token.

        ``digest``: ``tokens.digest(bearer)`` when the caller has it already
        (the rate limit is keyed by it). A live session's answer is kept in
        :attr:`session_cache` (:mod:`commonroom.engine.sessions_cache`: exact,
        emptied by every session, participant or invitation write); its
        expiry is checked against the clock each time.
        Raises ``Unauthorized`` (missing, unknown or revoked) or
        ``SessionExpired`` (past ``expires_at``).
        """
        if not bearer:
            raise Unauthorized("a bearer token is required",
                               details={"reason": "missing_bearer"})
        if digest is None:
            digest = tokens.digest(bearer)
        cached = self.session_cache.get(digest)
        if cached is None:
            cached = self._authenticate_row(bearer, digest)
        actor, expires = cached
        if expires <= self.clock.now():
            raise SessionExpired("the session expired; join again with a new invitation",
                                 details={"session_id": actor.session_id, "expires_at": actor.expires_at})
        return actor

    def _authenticate_row(self, bearer: str, digest: str) -> tuple[Actor, _dt.datetime]:
        """``(actor, expires)`` read from the sidecar (kept in the cache unless revoked or expired)."""
        generation = self.session_cache.generation
        found = self.store.db.execute_sql(
            'SELECT s."id", s."token_hash", s."capabilities", s."expires_at", s."revoked_at", '
            'p."id", p."name" FROM "session" AS s JOIN "participant" AS p ON p."id" = s."participant_id" '
            'WHERE s."token_hash" = ?',
            (digest,),
        ).fetchone()
        if found is None or not tokens.matches(bearer, found[1]):
            raise Unauthorized("unknown bearer token", details={"reason": "unknown_bearer"})
        session_id, _, capabilities, expires_at, revoked_at, participant_id, name = found
        if revoked_at:
            raise Unauthorized("the session was revoked",
                               details={"reason": "revoked", "session_id": session_id})
        actor = Actor(
            kind="session",
            capabilities=frozenset(json.loads(capabilities)),
            session_id=session_id,
            participant_id=participant_id,
            participant_name=name,
            expires_at=expires_at,
        )
        expires = parse_rfc3339(expires_at)
        if expires > self.clock.now():
            self.session_cache.put(digest, generation, actor, expires)
        return actor, expires

    def session_live(self, session_id: str) -> bool:
        """True while the session is neither revoked nor expired (for streams)."""
        row = row_by_id(self.store.models.Session, session_id)
        return bool(
            row is not None
            and not row.revoked_at
            and parse_rfc3339(row.expires_at) > self.clock.now()
        )

    def session_info(self, actor: Actor) -> SessionWire:
        """The caller's own session (``common.json#/$defs/Session``)."""
        models = self.store.models
        row = row_by_id(models.Session, actor.session_id)
        if row is None:
            raise pw.DoesNotExist(f"no session {actor.session_id}")
        return session_dict(row, row_by_id(models.Participant, row.participant_id))

    def revoke(self, *, invitation_ref: str | None = None, session_id: str | None = None) -> RevokeResult:
        """Revoke an invitation (by id or whole token) or a session (by id).

        Operator only. Returns ``owner.json#/$defs/RevokeResult``; ``revoked``
        is false when it was revoked already. Raises ``NotFound`` for an
        unknown id, ``InvalidRequest`` unless exactly one is given.
        """
        models = self.store.models
        Invitation, Session = models.Invitation, models.Session
        if (invitation_ref is None) == (session_id is None):
            raise InvalidRequest("give exactly one of invitation or session",
                                 details={"pointer": ""})
        if invitation_ref is not None:
            ref = invitation_ref.strip()
            if ref.startswith(invitation.PREFIX):
                secret = invitation.decode(ref)["secret"]
                query = Invitation.secret_hash == tokens.digest(secret)
            else:
                query = Invitation.id == ref

            def revoke_invitation(ctx: WriteContext) -> RevokeResult:
                row = Invitation.get_or_none(query)
                if row is None:
                    raise NotFound("no such invitation", details={"invitation": ref if not ref.startswith(invitation.PREFIX) else "(token)"})
                if row.revoked_at:
                    return {"revoked": False, "kind": "invitation", "id": row.id}
                row.revoked_at = self.clock.stamp()
                row.save()
                ctx.emit("invitation.revoked", {"invitation_id": row.id})
                return {"revoked": True, "kind": "invitation", "id": row.id}

            return self.store.write(revoke_invitation)

        def revoke_session(ctx: WriteContext) -> RevokeResult:
            row = Session.get_or_none(Session.id == session_id)
            if row is None:
                raise NotFound("no such session", details={"session": session_id})
            if row.revoked_at:
                return {"revoked": False, "kind": "session", "id": row.id}
            row.revoked_at = self.clock.stamp()
            row.save()
            ctx.emit("session.revoked", {"session_id": row.id},
                     participant_id=row.participant_id, session_id=row.id)
            return {"revoked": True, "kind": "session", "id": row.id}

        return self.store.write(revoke_session)
