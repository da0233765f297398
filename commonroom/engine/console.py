"""The operator's console: one-time login codes, console cookies, the sessions view.

``ce console FILE`` asks the running room (owner token) for a login code
(:meth:`ConsoleMixin.console_code`: single use, 60 s). Visiting
``/console/login?code=…`` redeems it (:meth:`ConsoleMixin.console_redeem`)
for a console cookie value (24 h) that admits that browser to the owner
port (:meth:`ConsoleMixin.console_admits`). Codes and cookies are stored
only as sha256 digests, in the sidecar's ``meta`` table (so a console
survives a room restart), and compared in constant time. Nothing here logs.

:meth:`ConsoleMixin.sessions` is the operator's list of live sessions with
each board's latest retained activity (a fact, never presence).
"""

from __future__ import annotations

import json
from typing import Any, Iterable, cast

import peewee as pw

from commonroom.generated.types.owner import ConsoleCode, SessionsPage, SessionSummary

from .. import tokens
from ..clock import parse_rfc3339, rfc3339
from ..errors import Unauthorized
from ..store import WriteContext
from ..store.models import live_session_sql
from ..store.rows import select_rows
from .access import session_dict
from .base import Actor, EngineBase, encode_cursor, page_after_stamp_and_id, parse_limit, require

#: A login code lives this long (seconds) and works once.
CODE_SECONDS = 60
#: A console cookie admits its browser this long (seconds).
COOKIE_SECONDS = 24 * 3600
#: At most this many codes and cookies are kept (the oldest go first).
KEEP = 32
CODE_PREFIX = "crc_"
COOKIE_PREFIX = "crk_"
_CODES, _COOKIES = "console_codes", "console_cookies"


class ConsoleMixin(EngineBase):
    """Console logins (codes → cookies, digests only) and the sessions view."""

    def _console_table(self, key: str) -> dict[str, str]:
        """digest → expires_at of the live entries under ``key``."""
        try:
            raw = json.loads(self.store.meta(key) or "{}")
        except ValueError:
            return {}
        now = self.clock.now()
        return {d: e for d, e in raw.items() if isinstance(e, str) and parse_rfc3339(e) > now} \
            if isinstance(raw, dict) else {}

    def _console_store(self, key: str, table: dict[str, str]) -> None:
        newest = dict(sorted(table.items(), key=lambda item: item[1])[-KEEP:])
        self.store.set_meta(key, json.dumps(newest, sort_keys=True))

    def _console_issue(self, key: str, prefix: str, seconds: int) -> tuple[str, str]:
        """A fresh secret under ``key`` (call inside a write): ``(secret, expires_at)``."""
        secret = tokens.new_secret(prefix)
        expires_at = self.clock.after(seconds)
        table = self._console_table(key)
        table[tokens.digest(secret)] = expires_at
        self._console_store(key, table)
        return secret, expires_at

    @staticmethod
    def _console_find(table: dict[str, str], secret: str) -> str | None:
        """The stored digest ``secret`` hashes to, compared in constant time with each."""
        found = None
        for stored in table:
            if tokens.matches(secret, stored):
                found = stored
        return found

    def console_code(self) -> ConsoleCode:
        """A one-time console login code (single use, 60 s): ``owner.json#/$defs/ConsoleCode``.

        The owner port only (the operator); the code is shown once and kept as its digest.
        """
        def issue(ctx: WriteContext) -> ConsoleCode:
            code, expires_at = self._console_issue(_CODES, CODE_PREFIX, CODE_SECONDS)
            return {"code": code, "login_path": "/console/login?code=" + code, "expires_at": expires_at}

        return self.store.write(issue)

    def console_redeem(self, code: str) -> tuple[str, int]:
        """Redeem a login ``code`` once: ``(cookie value, max_age_seconds)``.

        An unknown, used or expired code is ``Unauthorized``, with nothing changed.
        """
        def redeem(ctx: WriteContext) -> tuple[str, int]:
            codes = self._console_table(_CODES)
            found = self._console_find(codes, code) if code.startswith(CODE_PREFIX) else None
            if found is None:
                raise Unauthorized("this console login link is unknown, used or expired: run ce console FILE again",
                                   details={"reason": "console_code"})
            del codes[found]
            self._console_store(_CODES, codes)
            cookie, _ = self._console_issue(_COOKIES, COOKIE_PREFIX, COOKIE_SECONDS)
            return cookie, COOKIE_SECONDS

        return self.store.write(redeem)

    def console_admits(self, cookie: str | None) -> bool:
        """True when ``cookie`` is a live console cookie of this room (constant-time compare)."""
        if not cookie or not cookie.startswith(COOKIE_PREFIX):
            return False
        return self._console_find(self._console_table(_COOKIES), cookie) is not None

    def sessions(self, actor: Actor, limit: Any = None, cursor: str | None = None) -> SessionsPage:
        """Live sessions in join order, each with its board's latest retained activity.

        ``owner.json#/$defs/SessionsPage``; ``last_activity_at`` is the
        newest ``updated_at`` of the session's retained board messages (null
        when its board is empty): a fact the room holds, not presence.
        ``limit`` 1 to 200 (default 50). Needs ``read``: the owner's ``sessions_list``
        (``/owner/sessions``) and a participant's ``workspace_sessions`` (``/workspace/sessions``)
        answer the same page; a session id, participant, capabilities and expiry are no secret (the
        authority is the room's capabilities), the token is never in it.
        """
        require(actor, "read")
        models = self.store.models
        Session, Message = models.Session, models.BoardMessage
        size = parse_limit(limit)
        now = rfc3339(self.clock.now())
        rows = page_after_stamp_and_id(Session, cursor, size, (live_session_sql(),), (now,))
        ids = [r.id for r in rows[:size]]
        latest: dict[str, tuple[str | None, int, int]] = {}
        people: dict[str, Any] = {}  # the sessions' participants, one statement (not one lazy load a row)
        if ids:
            wanted = sorted({r.participant_id for r in rows[:size]})
            people = {p.id: p for p in select_rows(models.Participant,
                                                   f'WHERE "id" IN ({", ".join("?" for _ in wanted)})', wanted)}
            grouped = cast("Iterable[tuple[str, str, int, int | None]]", (Message.select(
                Message.board_session_id, pw.fn.MAX(Message.updated_at), pw.fn.COUNT(Message.id),
                pw.fn.SUM(pw.Case(None, [(Message.status == "open", 1)], 0)))
                .where(Message.board_session_id.in_(ids)).group_by(Message.board_session_id).tuples()))
            latest = {sid: (last, count, int(opened or 0)) for sid, last, count, opened in grouped}
        page: list[SessionSummary] = []
        for row in rows[:size]:
            last_at, count, opened = latest.get(row.id, (None, 0, 0))
            page.append({"session": session_dict(row, people[row.participant_id]), "last_activity_at": last_at,
                         "board_messages": count, "open_messages": opened})
        more = len(rows) > size
        return {"sessions": page,
                "next_cursor": encode_cursor([rows[size - 1].created_at, rows[size - 1].id]) if more else None}
