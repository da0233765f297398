"""The two summaries the board workflow reads (seed ``collaboration-board.txt``; docs/boards.md, *Summaries*).

``session_discussion_summary(session_id)``: one session's board from its
retained messages: counts by kind and status, the open todos, the open
questions, the latest decisions, risks and answers, the last activity.
``session_handoff_summary(session_id)``: what one session did in the room
from the facts the room keeps: versions it committed, proposals it made,
leases it holds, handoffs it created or accepted, todos it completed and
messages recorded under it (``author_session_id``, the seed's explicit
provenance: nothing is inferred from a caller's credentials).

Both are reads, bounded and deterministic (:data:`SUMMARY_ITEMS` items a
list, :data:`SUMMARY_TEXT_CHARS` characters of a body or summary,
:data:`SUMMARY_BYTES` bytes of answer), and say what they left out: every
list has ``total`` and ``truncated``, every text its ``…_truncated`` flag,
the answer ``truncated`` and ``history_lost`` (retention dropped board
messages). Nothing is invented or copied elsewhere: every item is a stored
row as it is. Authority is that of the other board reads: ``read``, on
any session of the room (docs/boards.md, *Authority*); an unknown session
is ``not_found``.
"""

from __future__ import annotations

from typing import Any, Callable

from commonroom.generated.types.boards import BoardExcerpt, DiscussionSummary, HandoffSummary

from .. import jsontext
from ..clock import parse_rfc3339
from ..errors import NotFound
from ..vocabulary import PROPOSAL_STATUSES
from .base import Actor, require
from .board_base import KINDS, PRIORITIES, STATUSES, BoardBase

#: Items in one list of a summary (the rest are counted in ``total``; ``truncated``).
SUMMARY_ITEMS = 20
#: Characters kept of a message body, a version's or proposal's or handoff's summary (``…_truncated``).
SUMMARY_TEXT_CHARS = 500
#: Bytes of a summary answer (compact UTF-8 JSON, as the room sends it); items are left off beyond.
SUMMARY_BYTES = 64 * 1024

#: Most urgent first (the open lists' order), then the oldest.
_RANK = ('CASE m."priority" ' + " ".join(f"WHEN '{p}' THEN {rank}" for rank, p in enumerate(reversed(PRIORITIES)))
         + f" ELSE {len(PRIORITIES)} END")
#: A board message's columns as an excerpt reads them (``m``: the message, ``k``: its ACK row).
_EXCERPT = ('m."id", m."board_session_id", m."kind", m."priority", m."status", m."reply_to", m."participant_id", '
            'm."author_session_id", m."created_at", m."body", m."requires_ack", k."first_acked_at"')
_FROM = ('FROM "board_message" m LEFT JOIN "board_ack" k '
         'ON k."session_id" = m."board_session_id" AND k."message_id" = m."id" ')
#: A question nobody replied to (no retained reply, none pruned). A reply is always on its message's
#: board, so the probe is ``reply_to`` alone: its index (naming the board too, SQLite walked the board's).
_UNANSWERED = ('m."board_session_id" = ? AND m."kind" = \'question\' AND m."replies_pruned" = 0 AND NOT EXISTS '
               '(SELECT 1 FROM "board_message" r WHERE r."reply_to" = m."id")')
#: The handoffs a session created (``owner``) or accepted (``assignee``), with the time of that act.
_HANDOFFS = ('SELECT \'owner\' AS "role", h."id", h."status", h."created_at", h."updated_at", h."summary", '
             'h."created_at" AS "at" FROM "handoff" h WHERE h."owner_session_id" = ? '
             'UNION ALL SELECT \'assignee\', h."id", h."status", h."created_at", h."updated_at", h."summary", e."created_at" '
             'FROM "handoff_event" e JOIN "handoff" h ON h."id" = e."handoff_id" '
             'WHERE e."session_id" = ? AND e."type" = \'handoff.accepted\'')
#: Todos resolved by an answer recorded under the session.
_COMPLETED = ('FROM "board_message" a JOIN "board_message" t ON t."id" = a."reply_to" AND t."resolved_by_message_id" = a."id" '
              'WHERE a."author_session_id" = ? AND a."kind" = \'answer\'')


def cut(text: str | None) -> tuple[str, bool]:
    """``(text cut to SUMMARY_TEXT_CHARS characters, whether it was cut)``; None is ``""``."""
    text = text or ""
    return (text[:SUMMARY_TEXT_CHARS], True) if len(text) > SUMMARY_TEXT_CHARS else (text, False)


def fit(answer: dict[str, Any], lists: tuple[str, ...]) -> bool:
    """Leave items off ``answer``'s ``lists`` (keys) until its encoding fits :data:`SUMMARY_BYTES`.

    Deterministic: each step drops the last item of the longest list (on
    a tie, the one named last in ``lists``: the least important). Each
    list's ``truncated`` is then set when it holds fewer than its
    ``total``. True when any item was left off for the byte bound.
    """
    size = len(jsontext.dumps(answer).encode("utf-8"))
    dropped = False
    sizes = {name: [len(jsontext.dumps(item).encode("utf-8")) for item in answer[name]["items"]]
             for name in lists} if size > SUMMARY_BYTES else {}
    while size > SUMMARY_BYTES and any(sizes.values()):
        name = max(reversed(lists), key=lambda n: len(sizes[n]))
        items = sizes[name]
        size -= items.pop() + (1 if items else 0)  # the item, and its comma when others remain
        answer[name]["items"].pop()
        dropped = True
    for name in lists:
        section = answer[name]
        section["truncated"] = len(section["items"]) < section["total"]
    return dropped


def _any_cut(answer: dict[str, Any], lists: tuple[str, ...]) -> bool:
    """True when a list of ``answer`` was cut or a text of one of its items shortened."""
    return any(section["truncated"] or any(item.get("body_truncated") or item.get("summary_truncated")
                                           for item in section["items"])
               for section in (answer[name] for name in lists))


class SummariesMixin(BoardBase):
    """``session_discussion_summary`` and ``session_handoff_summary``: bounded reads of stored facts."""

    def _rows(self, sql: str, params: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        return list(self.store.db.execute_sql(sql, params).fetchall())

    def _scalar(self, sql: str, params: tuple[Any, ...]) -> Any:
        return self.store.db.execute_sql(sql, params).fetchone()[0]

    def _author(self, participant_id: str | None) -> dict[str, Any]:
        return {"participant_id": participant_id, "name": self.participant_name(participant_id) or "operator"}

    def _excerpt(self, row: tuple[Any, ...]) -> BoardExcerpt:
        body, body_cut = cut(row[9])
        return {"message_id": row[0], "session_id": row[1], "kind": row[2], "priority": row[3], "status": row[4],
                "reply_to": row[5], "author": self._author(row[6]),  # type: ignore[typeddict-item]
                "author_session_id": row[7], "created_at": row[8], "body": body, "body_truncated": body_cut}

    @staticmethod
    def _section(items: list[Any], total: int) -> dict[str, Any]:
        return {"items": items, "total": int(total), "truncated": len(items) < total}

    # -- the board -------------------------------------------------------------
    def session_discussion_summary(self, actor: Actor, session_id: str) -> DiscussionSummary:
        """A bounded summary of ``session_id``'s board from its retained messages. Needs ``read``.

        ``NotFound`` when no session has that id. Shape ``boards#DiscussionSummary``;
        bounds :data:`SUMMARY_ITEMS`, :data:`SUMMARY_TEXT_CHARS`, :data:`SUMMARY_BYTES`.
        """
        require(actor, "read")
        self._board_exists(session_id)
        revision, low_watermark = self._board_state(session_id)
        by_kind = dict.fromkeys(KINDS, 0)
        by_status = dict.fromkeys(STATUSES, 0)
        last: str | None = None
        open_todos = 0
        for kind, status, count, latest in self._rows(
                'SELECT "kind", "status", COUNT(*), MAX("updated_at") FROM "board_message" '
                'WHERE "board_session_id" = ? GROUP BY "kind", "status"', (session_id,)):
            by_kind[kind] += count
            by_status[status] += count
            open_todos += count if (kind, status) == ("todo", "open") else 0
            last = latest if last is None or latest > last else last
        now = parse_rfc3339(self.clock.stamp())

        def todo(row: tuple[Any, ...]) -> dict[str, Any]:
            body, body_cut = cut(row[9])
            acked_at = row[11] if row[10] else None
            age = int((now - parse_rfc3339(row[8])).total_seconds())
            return {"message_id": row[0], "priority": row[3], "author": self._author(row[6]), "created_at": row[8],
                    "age_seconds": max(age, 0), "requires_ack": bool(row[10]), "acked": acked_at is not None,
                    "first_acked_at": acked_at, "body": body, "body_truncated": body_cut}

        def latest_of(kind: str) -> dict[str, Any]:
            rows = self._rows(f'SELECT {_EXCERPT} {_FROM} WHERE m."board_session_id" = ? AND m."kind" = ? '
                              'ORDER BY m."seq" DESC LIMIT ?', (session_id, kind, SUMMARY_ITEMS))
            return self._section([self._excerpt(r) for r in rows], by_kind[kind])

        todos = self._rows(f'SELECT {_EXCERPT} {_FROM} WHERE m."board_session_id" = ? AND m."kind" = \'todo\' '
                           f'AND m."status" = \'open\' ORDER BY {_RANK}, m."seq" LIMIT ?', (session_id, SUMMARY_ITEMS))
        questions = self._rows(f'SELECT {_EXCERPT} {_FROM} WHERE {_UNANSWERED} ORDER BY {_RANK}, m."seq" LIMIT ?',
                               (session_id, SUMMARY_ITEMS))
        open_questions = self._scalar(f'SELECT COUNT(*) FROM "board_message" m WHERE {_UNANSWERED}', (session_id,))
        answer: dict[str, Any] = {
            "session_id": session_id, "revision": revision, "retained": sum(by_status.values()),
            "history_lost": low_watermark > 0, "last_activity_at": last, "by_kind": by_kind, "by_status": by_status,
            "open_todos": self._section([todo(r) for r in todos], open_todos),
            "open_questions": self._section([self._excerpt(r) for r in questions], open_questions),
            "decisions": latest_of("decision"), "risks": latest_of("risk"), "answers": latest_of("answer"),
            "truncated": False,
        }
        lists = ("open_todos", "open_questions", "decisions", "risks", "answers")
        answer["truncated"] = fit(answer, lists) or _any_cut(answer, lists)
        return answer  # type: ignore[return-value]

    # -- the session's acts -------------------------------------------------------
    def session_handoff_summary(self, actor: Actor, session_id: str) -> HandoffSummary:
        """What ``session_id`` did in the room, from stored facts only, bounded. Needs ``read``.

        ``NotFound`` when no session has that id (the same answer as the
        board reads). Shape ``boards#HandoffSummary``; bounds as
        :meth:`session_discussion_summary`. States no liveness or presence.
        """
        require(actor, "read")
        session = self._rows('SELECT "participant_id", "created_at", "expires_at", "revoked_at" FROM "session" '
                             'WHERE "id" = ?', (session_id,)) if isinstance(session_id, str) else []
        if not session:
            raise NotFound("no such session board", details={"session_id": session_id})
        participant_id, created_at, expires_at, revoked_at = session[0]
        n, sid = SUMMARY_ITEMS, (session_id,)
        times: list[str] = []

        def section(count_sql: str, rows_sql: str, params: tuple[Any, ...], item: Callable[[tuple[Any, ...]], Any]
                    ) -> dict[str, Any]:
            total, latest = self.store.db.execute_sql(count_sql, params).fetchone()
            if latest is not None:
                times.append(latest)
            return self._section([item(r) for r in self._rows(rows_sql, (*params, n))], total or 0)

        def version(r: tuple[Any, ...]) -> dict[str, Any]:
            text, text_cut = cut(r[4])
            return {"number": r[0], "created_at": r[1], "source": r[2], "proposal_id": r[3], "summary": text,
                    "summary_truncated": text_cut}

        def proposal(r: tuple[Any, ...]) -> dict[str, Any]:
            text, text_cut = cut(r[5])
            return {"proposal_id": r[0], "status": r[1], "created_at": r[2], "decided_at": r[3],
                    "committed_version": r[4], "summary": text, "summary_truncated": text_cut}

        def handoff(r: tuple[Any, ...]) -> dict[str, Any]:
            text, text_cut = cut(r[5])
            return {"handoff_id": r[1], "role": r[0], "status": r[2], "created_at": r[3], "updated_at": r[4],
                    "summary": text, "summary_truncated": text_cut}

        versions = section('SELECT COUNT(*), MAX("created_at") FROM "version" WHERE "session_id" = ?',
                           'SELECT "number", "created_at", "source", "proposal_id", "summary" FROM "version" '
                           'WHERE "session_id" = ? ORDER BY "number" DESC LIMIT ?', sid, version)
        proposals = section('SELECT COUNT(*), MAX("created_at") FROM "proposal" WHERE "session_id" = ?',
                            'SELECT "id", "status", "created_at", "decided_at", "committed_version", "summary" '
                            'FROM "proposal" WHERE "session_id" = ? ORDER BY "created_at" DESC, "id" DESC LIMIT ?',
                            sid, proposal)
        proposals["by_status"] = dict.fromkeys(PROPOSAL_STATUSES, 0)
        for status, count in self._rows('SELECT "status", COUNT(*) FROM "proposal" WHERE "session_id" = ? '
                                        'GROUP BY "status"', sid):
            proposals["by_status"][status] = count
        held = (self.clock.stamp(), session_id)
        leases = section('SELECT COUNT(*), MAX("acquired_at") FROM "lease" WHERE "released_at" IS NULL AND '
                         '"expired_at" IS NULL AND "expires_at" > ? AND "session_id" = ?',
                         'SELECT "id", "region", "acquired_at", "expires_at" FROM "lease" WHERE "released_at" IS NULL '
                         'AND "expired_at" IS NULL AND "expires_at" > ? AND "session_id" = ? '
                         'ORDER BY "acquired_at", "id" LIMIT ?', held,
                         lambda r: {"lease_id": r[0], "region": jsontext.loads(r[1]) if r[1] else None,
                                    "acquired_at": r[2], "expires_at": r[3]})
        handoffs = section(f'SELECT COUNT(*), MAX("at") FROM ({_HANDOFFS})',
                           f'SELECT * FROM ({_HANDOFFS}) ORDER BY "updated_at" DESC, "id", "role" LIMIT ?',
                           (session_id, session_id), handoff)
        completed = section(f'SELECT COUNT(*), MAX(t."resolved_at") {_COMPLETED}',
                            f'SELECT t."board_session_id", t."id", a."id", t."resolved_at" {_COMPLETED} '
                            'ORDER BY t."resolved_at" DESC, t."id" LIMIT ?', sid,
                            lambda r: {"session_id": r[0], "todo_message_id": r[1], "answer_message_id": r[2],
                                       "resolved_at": r[3]})
        messages = section('SELECT COUNT(*), MAX("created_at") FROM "board_message" WHERE "author_session_id" = ?',
                           f'SELECT {_EXCERPT} {_FROM} WHERE m."author_session_id" = ? '
                           'ORDER BY m."created_at" DESC, m."id" LIMIT ?', sid, self._excerpt)
        lost = self.store.db.execute_sql('SELECT 1 FROM "board" WHERE "low_watermark" > 0 LIMIT 1').fetchone()
        answer: dict[str, Any] = {
            "session_id": session_id,
            "session": {"participant": self._author(participant_id), "created_at": created_at,
                        "expires_at": expires_at, "revoked_at": revoked_at},
            "last_activity_at": max(times) if times else None,
            "versions": versions, "proposals": proposals, "leases": leases, "handoffs": handoffs,
            "completed_todos": completed, "messages": messages, "history_lost": lost is not None, "truncated": False,
        }
        lists = ("versions", "proposals", "leases", "handoffs", "completed_todos", "messages")
        answer["truncated"] = fit(answer, lists) or _any_cut(answer, lists)
        return answer  # type: ignore[return-value]
