"""Leases: a region reserved for one session for a TTL (DESIGN.md, *Leases*).

A lease is live while it is not released, its ``expires_at`` is ahead and
its session is neither revoked nor expired (a lease dies with its session).
A lapsed lease is marked expired (event ``lease.expired``, once) by the
room timer :meth:`LeasesMixin.expire_leases` (``commonroom.timers``, every
second on the writer thread), or earlier by a write that looks at leases
(acquire, propose, approve), whichever runs first: both mark it in one
transaction that only picks leases not yet marked. A lease holds the lines its region resolved to when it was
acquired; every commit moves them through its change (:meth:`_shift_leases`),
so a lease keeps covering its text (a heading lease its section) and overlap
is decided on stored lines, never by parsing the document again.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal

from commonroom.generated.types.editing import Lease as LeaseWire
from commonroom.generated.types.editing import LeasesPage

from .. import regions, tokens
from ..hunks import Hunk, line_hunks, move_span
from ..clock import rfc3339
from ..errors import InvalidRequest, LeaseConflict, NotFound, PermissionDenied
from ..store import WriteContext
from ..store.models import live_session_sql
from ..vocabulary import LEASE_TTL_DEFAULT, LEASE_TTL_MAX, LEASE_TTL_MIN
from .base import Actor, EngineBase, decode_cursor, encode_cursor, parse_limit, require

#: Lease TTL bounds in seconds: ``editing#TtlSeconds`` (:mod:`commonroom.vocabulary`).
DEFAULT_TTL, MIN_TTL, MAX_TTL = LEASE_TTL_DEFAULT, LEASE_TTL_MIN, LEASE_TTL_MAX


def _ttl(value: Any) -> int:
    if value is None:
        return DEFAULT_TTL
    if isinstance(value, bool) or not isinstance(value, int) or not MIN_TTL <= value <= MAX_TTL:
        raise InvalidRequest(f"ttl_seconds must be an integer from {MIN_TTL} to {MAX_TTL}",
                             details={"pointer": "/ttl_seconds", "maximum": MAX_TTL})
    return value


#: The columns of a lease row, in the order :meth:`LeasesMixin._lease_rows` selects them.
_COLUMNS = ("id", "session_id", "participant_id", "region", "start_line", "end_line", "version",
            "acquired_at", "expires_at", "released_at", "expired_at")
_SELECT_COLUMNS = ", ".join(f'l."{c}"' for c in _COLUMNS)
_SELECT = f'SELECT {_SELECT_COLUMNS} FROM "lease" AS l '


@dataclass(slots=True)
class LeaseRow:
    """One lease row as the engine reads it (:data:`_COLUMNS`; no peewee model on the commit path).

    An acquire checks every live lease, so each must be cheap to read:
    no peewee model is built and no region parsed up front. ``region_text`` is the
    stored JSON text, parsed only when :attr:`region` is asked for (a
    conflict, an answer).
    """

    id: str
    session_id: str
    participant_id: str
    region_text: str | None
    start_line: int
    end_line: int
    version: int
    acquired_at: str
    expires_at: str
    released_at: str | None = None
    expired_at: str | None = None

    @property
    def region(self) -> Any:
        """The region as JSON (``{"heading": [...]}``, ``{"lines": [a, b]}``, ``{"document": true}``)."""
        return None if self.region_text is None else json.loads(self.region_text)


#: Open leases (neither released nor marked expired), each with its session ``s``.
_OPEN = ('FROM "lease" AS l JOIN "session" AS s ON s."id" = l."session_id" '
         'WHERE l."released_at" IS NULL AND l."expired_at" IS NULL ')
#: Live leases: open, within their TTL, their session alive.
_LIVE = f'SELECT {_SELECT_COLUMNS} {_OPEN}AND l."expires_at" > ? AND {live_session_sql("s")}'
#: An open lease has lapsed: past its TTL, or its session ended (one parameter, now, twice).
_LAPSED_TEST = f'(l."expires_at" <= ? OR NOT ({live_session_sql("s")}))'
#: A lease's lines, clamped to the text as :meth:`LeasesMixin._lease_span` clamps them, come
#: within a line of a span: every lease that can overlap it does (parameters: line count + 1,
#: the span's end + 1, the line count, the span's start - 1).
_NEAR_TEST = 'min(l."start_line", ?) <= ? AND min(l."end_line", ?) >= ?'
#: Live leases near a span (:data:`_LIVE`, then :data:`_NEAR_TEST`'s parameters).
_LIVE_NEAR = f"{_LIVE} AND {_NEAR_TEST}"
#: Lapsed leases: open, but past their TTL or their session ended.
_LAPSED = f'SELECT l."id", l."session_id", l."participant_id" {_OPEN}AND {_LAPSED_TEST}'
#: What an acquire reads, in one statement: the lapsed leases (its sweep marks them) and the
#: live ones near its span, each with whether it has lapsed (the last column).
_FOR_ACQUIRE = f'SELECT {_SELECT_COLUMNS}, {_LAPSED_TEST} {_OPEN}AND ({_LAPSED_TEST} OR ({_NEAR_TEST}))'


class LeasesMixin(EngineBase):
    """Acquire, renew, release and list leases (capability ``lease``)."""

    def _lease_rows(self, sql: str, params: tuple) -> list[LeaseRow]:
        """Lease rows of a statement selecting :data:`_COLUMNS` (the commit path skips peewee's query builder)."""
        return [LeaseRow(*values) for values in self.store.db.execute_sql(sql, params).fetchall()]

    # -- shared checks ---------------------------------------------------------

    def _any_open_lease(self) -> bool:
        """Cheap: is any lease neither released nor marked expired?"""
        return self.store.db.execute_sql(
            'SELECT 1 FROM "lease" WHERE "released_at" IS NULL AND "expired_at" IS NULL LIMIT 1'
        ).fetchone() is not None

    def _line_count(self, text: str) -> int:
        return len(self.head_lines()) if text is self.head().text else len(regions.lines_of(text))

    def _lease_span(self, row: LeaseRow, text: str, count: int | None = None) -> regions.Span:
        """The lease's lines in ``text`` (kept current by :meth:`_shift_leases`); ``count``: its line count."""
        if count is None:
            count = self._line_count(text)
        start = min(row.start_line, count + 1)
        return regions.Span(start, min(max(row.end_line, start - 1), count))

    def _shift_leases(self, delta: dict[str, Any], number: int, old_lines: list[str]) -> list[Hunk] | None:
        """Move every open lease's lines through a commit's real hunks (same transaction).

        ``delta`` replaced old lines ``start..end`` (of ``old_lines``, the
        lines before the commit) with ``lines``: the enclosing hunk. A lease
        above it stays, one below it moves by the change in length; one that
        reaches into it moves through the real hunks inside it
        (:func:`commonroom.hunks.move_span`: it grows only by lines inserted
        inside it, and covers what replaced its own lines), found with the
        line diff only then. So a lease keeps covering its text (a heading
        lease its section), two edits far apart never make it grow to the
        text between them, and no heading is parsed again on the commit path.
        Returns the real hunks when they were needed, else None.
        """
        Lease = self.store.models.Lease
        hs, he, new = delta["start"], delta["end"], delta["lines"]
        shift = len(new) - (he - hs + 1)
        rows = self.store.db.execute_sql(
            'SELECT "id", "start_line", "end_line" FROM "lease" '
            'WHERE "released_at" IS NULL AND "expired_at" IS NULL'
        ).fetchall()
        real: list[Hunk] | None = None
        for lease_id, start, end in rows:
            if start > he:
                moved = (start + shift, end + shift)
            elif start < hs and end < hs:
                continue
            else:
                if real is None:
                    real = line_hunks(old_lines[hs - 1:he], new, hs - 1)
                moved = move_span(start, end, real)
            if moved != (start, end):
                self.store.update(Lease, lease_id, start_line=moved[0], end_line=moved[1], version=number)
        return real

    def _sweep_expired(self, ctx: WriteContext) -> int:
        """Mark leases past their TTL (or whose session ended) expired; emit events; how many.

        Inside a write (``BEGIN IMMEDIATE``): only leases not marked yet are
        picked, so a lease's ``lease.expired`` is emitted once whichever of
        the timer and a write gets there first (an acquire picks them with
        its own read, ``_FOR_ACQUIRE``, and marks them the same way).
        """
        now = rfc3339(self.clock.now())
        dead = self.store.db.execute_sql(_LAPSED, (now, now)).fetchall()
        self._mark_expired(ctx, dead, now)
        return len(dead)

    def _mark_expired(self, ctx: WriteContext, dead: list[tuple[str, str, str]], now: str) -> None:
        """Mark the lapsed leases ``dead`` (``(id, session_id, participant_id)`` each) expired at ``now``; one ``lease.expired`` each."""
        Lease = self.store.models.Lease
        for lease_id, session_id, participant_id in dead:
            self.store.update(Lease, lease_id, expired_at=now)
            ctx.emit("lease.expired", {"lease_id": lease_id, "session_id": session_id},
                     participant_id=participant_id, session_id=session_id, time=now)

    def expire_leases(self) -> int:
        """Room timer sweep: mark every lapsed lease expired now; the number marked.

        Idempotent. Runs on the writer thread (``commonroom.timers``); when
        no lease has lapsed it only reads (one indexed query) and writes
        nothing.
        """
        now = rfc3339(self.clock.now())  # one query over the open leases' partial index (lease_open)
        if self.store.db.execute_sql(_LAPSED + " LIMIT 1", (now, now)).fetchone() is None:
            return 0
        return int(self.store.write(self._sweep_expired))

    def _check_leases(self, actor_sessions: set[str | None], span: regions.Span, text: str) -> None:
        """Raise ``LeaseConflict`` if a live lease of another session overlaps ``span``.

        SQLite hands back only the live leases whose lines (clamped to the
        text, as :meth:`_lease_span` clamps them) come within a line of
        ``span``: every lease that can overlap it, and usually none, so the
        writer thread steps one row rather than one per live lease (each
        step lets go of the GIL and waits to take it back from the loop).
        """
        count = self._line_count(text)
        now = rfc3339(self.clock.now())
        near = self._lease_rows(_LIVE_NEAR, (now, now, count + 1, span.end + 1, count, span.start - 1))
        self._refuse_overlap(actor_sessions, span, text, near, count)

    def _refuse_overlap(self, actor_sessions: set[str | None], span: regions.Span, text: str,
                        rows: list[LeaseRow], count: int) -> None:
        """``LeaseConflict`` for the first of the live leases ``rows`` of another session that overlaps ``span``.

        ``count``: the line count of ``text``, which the leases' lines are clamped to.
        """
        for row in rows:
            if row.session_id in actor_sessions:
                continue
            held = self._lease_span(row, text, count)
            if regions.overlaps(held, span):
                holder = self.participant_name(row.participant_id) or "another session"
                where = f"line {held.start}" if held.start == held.end else f"lines {held.start}-{held.end}"
                raise LeaseConflict(
                    f"{holder} holds {where} until {row.expires_at} (lease {row.id}); wait until it is "
                    "released or expires, or ask them to release it",
                    details={"session_id": row.session_id, "participant": holder, "expires_at": row.expires_at,
                             "lines": [held.start, held.end]},
                    lease_id=row.id,
                    region=self._lease_region(row, text, held),
                )

    def _lease_region(self, row: LeaseRow, text: str, span: regions.Span) -> Any:
        """The lease's region as it is now: a heading lease names its heading as the text has it
        at the lease's first line (renamed, or under a renamed parent); otherwise as stored."""
        region = row.region
        if isinstance(region, dict) and "heading" in region:
            for heading in regions.headings(text):
                if heading.line == span.start:
                    return {"heading": list(heading.path)}
        return region

    def _lease_dict(self, row: LeaseRow, text: str | None = None, now: str | None = None) -> LeaseWire:
        """A lease's wire form (``editing.json#/$defs/Lease``), its status as of ``now`` (an RFC 3339 stamp; default now)."""
        head = self.head()
        text = text if text is not None else head.text
        span = self._lease_span(row, text)
        status: Literal["active", "released", "expired"] = "released" if row.released_at else "expired" if row.expired_at or row.expires_at <= (now or rfc3339(self.clock.now())) else "active"
        return {
            "id": row.id,
            "session_id": row.session_id,
            "participant": self.participant_name(row.participant_id) or "?",
            "region": self._lease_region(row, text, span),
            "lines": [span.start, span.end],
            "version": head.number,
            "acquired_at": row.acquired_at,
            "expires_at": row.expires_at,
            "status": status,
        }

    # -- operations ------------------------------------------------------------

    def acquire_lease(self, actor: Actor, region: Any, ttl_seconds: Any = None) -> LeaseWire:
        """Lease ``region`` for ``ttl_seconds`` (:data:`DEFAULT_TTL` when None, at most :data:`MAX_TTL`).

        Returns ``editing.json#/$defs/Lease``. Raises ``PermissionDenied``
        (``lease``), ``InvalidRegion``, ``InvalidRequest`` (TTL) or
        ``LeaseConflict`` (with ``lease_id`` and ``region`` of the other lease).
        """
        Lease = self.store.models.Lease
        require(actor, "lease")
        if actor.session_id is None or actor.participant_id is None:
            raise PermissionDenied("leases belong to sessions; the operator cannot hold one",
                                   details={"required": "session"})
        ttl = _ttl(ttl_seconds)
        session_id, participant_id = actor.session_id, actor.participant_id

        def acquire(ctx: WriteContext) -> LeaseWire:
            moment = self.clock.now()  # one reading for the whole write
            now = rfc3339(moment)
            head = self.head()
            count = len(self.head_lines())
            span = regions.resolve(head.text, region, line_count=count)
            # one statement for the sweep and the check (the lapsed leases, and the live ones near the span)
            found = self.store.db.execute_sql(
                _FOR_ACQUIRE, (now, now, now, now, count + 1, span.end + 1, count, span.start - 1)).fetchall()
            self._mark_expired(ctx, [values[:3] for values in found if values[-1]], now)
            live = [LeaseRow(*values[:-1]) for values in found if not values[-1]]
            self._refuse_overlap({actor.session_id}, span, head.text, live, count)
            row = LeaseRow(
                id=tokens.new_id("l_"),
                session_id=session_id,
                participant_id=participant_id,
                region_text=Lease._meta.fields["region"].db_value(span.region),  # normalized: whole document {"document": true}
                start_line=span.start,
                end_line=span.end,
                version=head.number,
                acquired_at=now,
                expires_at=self.clock.after(ttl, since=moment),
            )
            self.store.insert(Lease, region=span.region, **{c: getattr(row, c) for c in _COLUMNS if c != "region"})
            lease = self._lease_dict(row, head.text, now)
            ctx.emit("lease.acquired", {"lease_id": row.id, "region": lease["region"], "lines": lease["lines"],
                                        "expires_at": row.expires_at},
                     participant_id=actor.participant_id, session_id=actor.session_id, time=now)
            return lease

        return self.store.write(acquire)

    def _own_live_lease(self, actor: Actor, lease_id: str, now: str) -> LeaseRow:
        """The lease ``lease_id`` of ``actor``'s session, live at ``now`` (RFC 3339).

        ``NotFound`` for an unknown lease or one of another session;
        ``LeaseConflict`` (409, ``lease_id``, ``details.status``: ``released``
        or ``expired``) for a lease that is no longer active: a transition
        the record's state does not allow (docs/protocol.md, *Errors*).
        """
        found = self._lease_rows(_SELECT + 'WHERE l."id" = ?', (lease_id,))
        row = found[0] if found else None
        if row is None or (actor.kind == "session" and row.session_id != actor.session_id):
            raise NotFound("no such lease held by this session", details={"lease_id": lease_id})
        if row.released_at or row.expired_at or row.expires_at <= now:
            status = "released" if row.released_at else "expired"
            raise LeaseConflict(f"the lease is {status}, no longer active",
                                details={"lease_id": lease_id, "status": status, "reason": "not_active",
                                         "allowed_from": ["active"]}, lease_id=lease_id)
        return row

    def renew_lease(self, actor: Actor, lease_id: str, ttl_seconds: Any = None) -> LeaseWire:
        """Extend a live lease of this session to now + TTL. ``NotFound`` / ``LeaseConflict`` (not active) /
        ``InvalidRequest`` (TTL)."""
        require(actor, "lease")
        ttl = _ttl(ttl_seconds)

        def renew(ctx: WriteContext) -> LeaseWire:
            moment = self.clock.now()  # one reading for the whole write
            now = rfc3339(moment)
            row = self._own_live_lease(actor, lease_id, now)
            row.expires_at = self.clock.after(ttl, since=moment)
            self.store.update(self.store.models.Lease, row.id, expires_at=row.expires_at)
            ctx.emit("lease.renewed", {"lease_id": row.id, "expires_at": row.expires_at},
                     participant_id=row.participant_id, session_id=row.session_id, time=now)
            return self._lease_dict(row, now=now)

        return self.store.write(renew)

    def release_lease(self, actor: Actor, lease_id: str) -> LeaseWire:
        """Release a live lease of this session; the operator may break any (the console's *Break*).

        The ``lease.released`` event names who did it: ``payload.by`` is the
        holder's name, or ``operator`` with the operator as the event's actor
        (both ids null) when the operator broke another's lease;
        ``payload.session_id`` is the holder's session. ``NotFound`` /
        ``LeaseConflict`` (no longer active).
        """
        require(actor, "lease")

        def release(ctx: WriteContext) -> LeaseWire:
            now = rfc3339(self.clock.now())  # one reading for the whole write
            row = self._own_live_lease(actor, lease_id, now)
            row.released_at = now
            self.store.update(self.store.models.Lease, row.id, released_at=row.released_at)
            if actor.kind == "operator":  # broken by the operator: the event names the operator, not the holder
                ctx.emit("lease.released", {"lease_id": row.id, "by": "operator", "session_id": row.session_id},
                         time=now)
            else:
                ctx.emit("lease.released", {"lease_id": row.id, "by": actor.name, "session_id": row.session_id},
                         participant_id=row.participant_id, session_id=row.session_id, time=now)
            return self._lease_dict(row, now=now)

        return self.store.write(release)

    def leases(self, actor: Actor, limit: Any = None, cursor: str | None = None) -> LeasesPage:
        """A page of live leases, oldest acquired first (``editing.json#/$defs/LeasesPage``).

        ``limit`` 1 to 200 (default 50), else ``InvalidRequest``; ``cursor``
        from the previous page's ``next_cursor`` (``[acquired_at, id]`` of
        the last lease shown, so leases ending between pages never shift
        the next one). Needs ``read`` or ``lease``.
        """
        if "lease" not in actor.capabilities:
            require(actor, "read")
        size = parse_limit(limit)
        after = decode_cursor(cursor)
        if after is not None and not (isinstance(after, list) and len(after) == 2
                                      and all(isinstance(x, str) for x in after)):
            raise InvalidRequest("cursor is not one this room issued", details={"parameter": "cursor"})
        if not self._any_open_lease():
            return {"leases": [], "next_cursor": None}
        now = rfc3339(self.clock.now())
        sql, params = _LIVE, [now, now]
        if after is not None:
            sql += ' AND (l."acquired_at" > ? OR (l."acquired_at" = ? AND l."id" > ?))'
            params += [after[0], after[0], after[1]]
        rows = self._lease_rows(sql + ' ORDER BY l."acquired_at", l."id" LIMIT ?', (*params, size + 1))
        head = self.head()
        page = [self._lease_dict(r, head.text, now) for r in rows[:size]]
        last = rows[size - 1] if len(rows) > size else None
        return {"leases": page, "next_cursor": encode_cursor([last.acquired_at, last.id]) if last else None}
