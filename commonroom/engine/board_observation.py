"""Observation: a board's message-state delta after an opaque token, with one bounded wait.

Seed ``collaboration-board.txt`` (*observe_session_messages*). A token is
``bo1.<board and revision>.<HMAC>`` under the sidecar's key; the wait is
one subscription on the live hub (``Streams.wait_next``), never polling.
See ``docs/boards.md``, *Observation*.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from typing import Any, Callable

from commonroom.generated.types.boards import Observation

from ..errors import InvalidRequest
from .base import Actor, require
from .board_base import (BOARD_EVENTS, OBSERVE_PAGE, TOKEN_PREFIX, WAIT_SECONDS_MAX, WIRE_COLUMNS, BoardBase,
                         _canonical)

#: Observation answers shared while the database is unchanged (see ``_observe_now``).
OBSERVE_CACHE = 64
_DELTA_SQL = (f'SELECT {", ".join(chr(34) + c + chr(34) for c in WIRE_COLUMNS)} FROM "board_message" '
              'WHERE "board_session_id" = ? AND "revision" > ? ORDER BY "revision" LIMIT ?')


class ObservationMixin(BoardBase):
    """``observe_session_messages`` and its tokens."""

    #: The room's :class:`commonroom.live.stream.Streams` (set by the room), for waits.
    board_streams: Any = None

    def _token_key(self) -> bytes:
        key = self._board_token_key
        if key is None:
            secret = self.store.meta("board_token_secret")
            if not secret:
                raise InvalidRequest("this sidecar has no board token key")
            key = self._board_token_key = secret.encode("ascii")  # minted once per sidecar
        return key

    def _token(self, session_id: str, revision: int) -> str:
        payload = base64.urlsafe_b64encode(_canonical([session_id, revision])).rstrip(b"=").decode()
        mac = hmac.new(self._token_key(), payload.encode(), hashlib.sha256).hexdigest()[:32]
        return f"{TOKEN_PREFIX}{payload}.{mac}"

    def _read_token(self, session_id: str, token: str, revision: int) -> int:
        """The revision inside ``token``; ``InvalidRequest`` when forged, foreign or from the future."""
        bad = InvalidRequest("after_observation_token is not a token of this board",
                             details={"parameter": "after_observation_token"})
        if not isinstance(token, str) or not token.startswith(TOKEN_PREFIX) or token.count(".") != 2:
            raise bad
        payload, mac = token[len(TOKEN_PREFIX):].split(".")
        expected = hmac.new(self._token_key(), payload.encode(), hashlib.sha256).hexdigest()[:32]
        if not hmac.compare_digest(mac, expected):
            raise bad
        try:
            board, after = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
        except (ValueError, TypeError):
            raise bad from None
        if board != session_id or not isinstance(after, int) or isinstance(after, bool) or not 0 <= after <= revision:
            raise bad
        return after

    def _observe_now(self, session_id: str, after: int, limit: int) -> Observation:
        """The delta after revision ``after``, read in one transaction with plain SQL.

        Waits woken by one post all read the same delta: the answer is
        shared while the database is unchanged (the cache key holds this
        thread's connection, its SQLite ``data_version`` and its
        ``total_changes``, which move with any commit by another
        connection or by this one, so a shared answer is never stale).
        """
        db = self.store.db
        cache = self._observe_cache
        with db.atomic():
            connection = db.connection()  # per thread: its counters mean nothing on another connection
            key = (session_id, after, limit, id(connection), db.execute_sql("PRAGMA data_version").fetchone()[0],
                   connection.total_changes)
            hit = cache.get(key)
            if hit is not None:
                return {**hit, "messages": list(hit["messages"])}
            revision, low = self._board_state(session_id)
            cursor = db.execute_sql(_DELTA_SQL, (session_id, after, limit + 1))
            rows = [dict(zip(WIRE_COLUMNS, found)) for found in cursor.fetchall()]
            more = len(rows) > limit
            rows = rows[:limit]
            for row in rows:
                row["tags"] = json.loads(row["tags"]) if row["tags"] else []
            messages = [self._wire_of(row) for row in rows]
        through = rows[-1]["revision"] if more else revision
        result: Observation = {
            "session_id": session_id, "observation_token": self._token(session_id, through), "baseline": False,
            "changed": bool(rows), "messages": messages, "has_more": more, "history_lost": after < low,
            "wait_outcome": "updated" if rows else "timeout"}
        if len(cache) >= OBSERVE_CACHE:
            cache.clear()
        cache[key] = result
        return {**result, "messages": list(messages)}

    async def observe_session_messages(self, actor: Actor, session_id: str,
                                       after_observation_token: str | None = None, wait_seconds: Any = None,
                                       limit: Any = None) -> Observation:
        """The board's message-state delta after a token (see ``docs/boards.md``). Needs ``read``.

        Without a token: a baseline (the current revision), nothing
        replayed. With one: retained messages whose state changed after it,
        in change order, at most ``limit`` (1–100); ``has_more`` when there
        are more (the token then covers only what was returned). With
        nothing new and ``wait_seconds`` > 0, one wait on the live hub.
        """
        require(actor, "read")
        wait = 0 if wait_seconds is None else wait_seconds
        if not isinstance(wait, int) or isinstance(wait, bool) or not 0 <= wait <= WAIT_SECONDS_MAX:
            raise InvalidRequest(f"wait_seconds must be an integer from 0 to {WAIT_SECONDS_MAX}",
                                 details={"parameter": "wait_seconds"})
        size = OBSERVE_PAGE if limit is None else limit
        if not isinstance(size, int) or isinstance(size, bool) or not 1 <= size <= OBSERVE_PAGE:
            raise InvalidRequest(f"limit must be an integer from 1 to {OBSERVE_PAGE}", details={"parameter": "limit"})
        self._board_exists(session_id)
        revision, _ = self._board_state(session_id)
        if after_observation_token is None:
            return {"session_id": session_id, "observation_token": self._token(session_id, revision),
                    "baseline": True, "changed": False, "messages": [], "has_more": False, "history_lost": False,
                    "wait_outcome": None}
        after = self._read_token(session_id, after_observation_token, revision)
        mark = self.store.last_event_id()  # before the read: a change after it is in the ring
        result = self._observe_now(session_id, after, size)
        if result["changed"] or result["history_lost"] or wait == 0 or self.board_streams is None:
            return result
        accept: Callable[[dict], bool] = lambda event: (
            event.get("type") in BOARD_EVENTS and event.get("payload", {}).get("board_session_id") == session_id)
        await self.board_streams.wait_next(mark, float(wait), session_id=actor.session_id, accept=accept)
        return self._observe_now(session_id, after, size)
