"""``ce observe``'s sentences: one readable line per event type, for people.

Each event of the schema's ``EventType`` list has its sentence here
(:data:`SENTENCES`; a type added later prints as ``TYPE by NAME``, never a
payload dump). A sentence names people by name, never by id (the ids
are in ``ce observe --json``), says times as ``10:18 (in 30m)``
(:func:`commonroom.cli.printing.clock`) and quotes what was said where the
caller may read it: a board message's body, the question a handoff's
assignee asked (or a tool's task asks) and the answer it got, a
handoff's summary and result, a proposal's summary (also of one made
before ``ce observe`` started). Those are read with the caller's own
session (:class:`Lookup`, each read at most once); a read the caller may
not make leaves the quote out. What earlier events said (a lease's lines,
a proposal's summary, who holds a session) is remembered for the later
ones (:class:`Memory`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Callable

from ..errors import CommonroomError
from .printing import clock

#: Characters of a quoted body, question or summary (the rest is cut with ``…``).
QUOTE_CHARS = 160


def quote(text: Any, width: int = QUOTE_CHARS) -> str:
    """``text`` on one line, in quotes, at most ``width`` characters of it."""
    flat = " ".join(str(text or "").split())
    return f"“{flat if len(flat) <= width else flat[:width - 1] + '…'}”"


def lines(value: Any) -> str:
    """``lines 3–7`` / ``line 3`` of a ``[start, end]`` pair; ``""`` for anything else."""
    if isinstance(value, list) and len(value) == 2:
        return f"line {value[0]}" if value[0] == value[1] else f"lines {value[0]}–{value[1]}"
    return ""


@dataclass
class Memory:
    """What the events seen so far said, for the sentences of later ones."""

    participants: dict[str, str] = field(default_factory=dict)  # participant id -> name
    sessions: dict[str, str] = field(default_factory=dict)  # session id -> participant name
    leases: dict[str, str] = field(default_factory=dict)  # lease id -> "lines 3–7"
    proposals: dict[str, str] = field(default_factory=dict)  # proposal id -> its summary, quoted
    handoffs: dict[str, str] = field(default_factory=dict)  # handoff id -> its summary, quoted
    own_session: str | None = None

    def learn(self, event: dict[str, Any]) -> None:
        """Remember what ``event`` says about names, leases, proposals and handoffs."""
        kind, payload, actor = event.get("type"), event.get("payload") or {}, event.get("actor") or {}
        if kind == "participant.joined" and isinstance(payload.get("participant"), dict):
            self.participants[payload["participant"].get("id", "")] = payload["participant"].get("name", "?")
        elif kind == "session.opened" and isinstance(payload.get("participant"), str):
            self.sessions[payload.get("session_id", "")] = payload["participant"]
            if actor.get("participant_id"):
                self.participants[actor["participant_id"]] = payload["participant"]
        elif kind == "lease.acquired" and lines(payload.get("lines")):
            self.leases[payload.get("lease_id", "")] = lines(payload.get("lines"))
        elif kind == "proposal.created" and payload.get("summary"):
            self.proposals[payload.get("proposal_id", "")] = quote(payload["summary"])
        elif kind == "handoff.created" and payload.get("summary"):
            self.handoffs[payload.get("handoff_id", "")] = quote(payload["summary"])
        if actor.get("session_id") and actor.get("participant_id") in self.participants:
            self.sessions.setdefault(actor["session_id"], self.participants[actor["participant_id"]])

    def who(self, event: dict[str, Any]) -> str:
        """The name of who acted: the participant, else ``the operator`` (no participant: the operator or the room)."""
        actor = event.get("actor") or {}
        if actor.get("participant_id"):
            return self.participants.get(actor["participant_id"], "someone")
        return "the operator"


class Lookup:
    """Reads a sentence quotes, made with the caller's session (``call(operation, values)``), each once.

    A read refused or failed (no ``read``, a task the caller may not see,
    the room away) is None: the sentence goes without the quote.
    """

    def __init__(self, call: Callable[[str, dict[str, Any]], Any]):
        self._call = call
        self._cache: dict[str, Any] = {}

    def _get(self, key: str, operation: str, values: dict[str, Any]) -> Any:
        if key not in self._cache:
            try:
                self._cache[key] = self._call(operation, values)
            except (CommonroomError, OSError, ValueError):
                self._cache[key] = None
        return self._cache[key]

    def proposal(self, proposal_id: str) -> dict[str, Any] | None:
        """A proposal (``editing#Proposal``, read as ``ce proposal show`` reads it), or None."""
        answer = self._get(f"p:{proposal_id}", "proposal_review", {"proposal_id": proposal_id})
        return answer.get("proposal") if isinstance(answer, dict) else None

    def message(self, board: str, message_id: str) -> dict[str, Any] | None:
        """A board message (``boards#Message``), or None."""
        page = self._get(f"m:{message_id}", "list_session_messages",
                         {"session_id": board, "message_id": message_id, "limit": 1})
        found = (page or {}).get("messages") or []
        return found[0] if found else None

    def handoff(self, handoff_id: str) -> dict[str, Any] | None:
        """A handoff (``handoffs#Handoff``), or None."""
        answer = self._get(f"h:{handoff_id}", "handoff_get", {"handoff_id": handoff_id})
        return answer if isinstance(answer, dict) else None

    def result(self, handoff_id: str) -> str | None:
        """A completed handoff's result text, read when its completion is seen (not the handoff read before)."""
        answer = self._get(f"r:{handoff_id}", "handoff_get", {"handoff_id": handoff_id})
        result = answer.get("result") if isinstance(answer, dict) else None
        return str(result) if result else None

    def _task(self, task_id: str, keys: list[str], why: str, event_id: Any = None) -> dict[str, Any]:
        """The task as it is now (read once per event: ``why``, ``keys`` and the event's id tell the reads
        apart), or ``{}``."""
        task = self._get(f"t:{why}:{task_id}:{','.join(keys)}:{event_id}", "task_get", {"task_id": task_id})
        return task if isinstance(task, dict) else {}

    def question(self, task_id: str, keys: list[str], event_id: Any = None) -> str | None:
        """The question of the task's input requests ``keys`` (their ``message``; every outstanding one when
        ``keys`` is empty), if the caller may see the task and it is still asked (an answered request is gone
        from the task: a replay of an old event goes without it). ``event_id``: the event that asks, so a task
        asking again (new keys, or what a partial answer left) is read again, not quoted from the first time."""
        requests = self._task(task_id, keys, "asked", event_id).get("inputRequests") or {}
        asked = [str(m) for k in (keys or sorted(requests))
                 if (m := ((requests.get(k) or {}).get("params") or {}).get("message"))]
        return " / ".join(asked) if asked else None

    def answer(self, task_id: str, keys: list[str]) -> str | None:
        """The answers given to the task's input requests ``keys`` (their text), if the caller may see the task."""
        responses = self._task(task_id, keys, "answered").get("inputResponses") or {}
        given = [str(a.get("answer") if isinstance(a, dict) and "answer" in a else json.dumps(a, ensure_ascii=False))
                 for k in keys if (a := responses.get(k)) is not None]
        return " / ".join(given) if given else None


def _board(memory: Memory, board: Any) -> str:
    if board and board == memory.own_session:
        return "your board"
    name = memory.sessions.get(str(board))
    return f"{name}'s board" if name else "a board"


def _summarized(known: dict[str, str], read: Callable[[str], dict[str, Any] | None], ident: str, noun: str) -> str:
    """``the handoff “summary”``: remembered from its creation event, else read (made before ``ce observe``
    started); ``a handoff`` when the caller cannot read it."""
    if ident not in known:
        found = read(ident)
        if found and found.get("summary"):
            known[ident] = quote(found["summary"])
    return f"the {noun} {known[ident]}" if ident in known else f"a {noun}"


def _handoff(memory: Memory, lookup: Lookup, payload: dict[str, Any]) -> str:
    return _summarized(memory.handoffs, lookup.handoff, str(payload.get("handoff_id", "")), "handoff")


def _proposal(memory: Memory, lookup: Lookup, payload: dict[str, Any]) -> str:
    return _summarized(memory.proposals, lookup.proposal, str(payload.get("proposal_id", "")), "proposal")


def _reason(payload: dict[str, Any]) -> str:
    return f": {quote(payload['reason'])}" if payload.get("reason") else ""


def _caps(payload: dict[str, Any]) -> str:
    return ", ".join(payload.get("capabilities") or []) or "no capabilities"


def _version(memory: Memory, lookup: Lookup, event: dict[str, Any]) -> str:
    p = event.get("payload") or {}
    where = f", {lines(p.get('lines'))}" if lines(p.get("lines")) else ""
    said = f": {quote(p['summary'])}" if p.get("summary") else ""
    return f"{p.get('author') or memory.who(event)} committed v{p.get('version')} ({p.get('source')}{where}){said}"


def _posted(memory: Memory, lookup: Lookup, event: dict[str, Any]) -> str:
    p = event.get("payload") or {}
    message = lookup.message(str(p.get("board_session_id")), str(p.get("message_id")))
    author = ((message or {}).get("author") or {}).get("name") or memory.who(event)
    kind = p.get("kind") or "message"
    reply = " in reply" if p.get("reply_to") else ""
    body = f": {quote(message['body'])}" if message and message.get("body") else ""
    return f"{author} posted {'an' if kind[0] in 'aeiou' else 'a'} {kind}{reply} on " \
           f"{_board(memory, p.get('board_session_id'))}{body}"


def _resolved(memory: Memory, lookup: Lookup, event: dict[str, Any]) -> str:
    p = event.get("payload") or {}
    message = lookup.message(str(p.get("board_session_id")), str(p.get("message_id")))
    body = f" {quote(message['body'])}" if message and message.get("body") else ""
    return f"{memory.who(event)} resolved the {(message or {}).get('kind') or 'message'}{body} on " \
           f"{_board(memory, p.get('board_session_id'))}"


def _asked(memory: Memory, lookup: Lookup, event: dict[str, Any]) -> str:
    p = event.get("payload") or {}
    question = lookup.question(str(p.get("task_id")), [str(k) for k in p.get("keys") or []], event.get("id"))
    owner = ((lookup.handoff(str(p.get("handoff_id"))) or {}).get("owner")) or "the owner"
    said = f": {quote(question)}" if question else ""
    return f"{memory.who(event)} asked {owner} about {_handoff(memory, lookup, p)}{said}"


def _answered(memory: Memory, lookup: Lookup, event: dict[str, Any]) -> str:
    p = event.get("payload") or {}
    given = lookup.answer(str(p.get("task_id")), [str(k) for k in p.get("keys") or []])
    said = f": {quote(given)}" if given else ""
    return f"{memory.who(event)} answered the question about {_handoff(memory, lookup, p)}{said}"


def _completed(memory: Memory, lookup: Lookup, event: dict[str, Any]) -> str:
    p = event.get("payload") or {}
    result = lookup.result(str(p.get("handoff_id")))
    said = f": {quote(result)}" if result else ": the result is ready"
    return f"{memory.who(event)} completed {_handoff(memory, lookup, p)}{said}"


def _task(memory: Memory, lookup: Lookup, event: dict[str, Any]) -> str:
    p = event.get("payload") or {}
    operation = str(p.get("operation") or "")
    what = f"the {operation.removeprefix('tool:')} task" if operation.startswith("tool:") else "a task"
    if p.get("task_status") == "input_required":
        question = lookup.question(str(p.get("task_id")), [], event.get("id"))
        return f"{what} asks for input" + (f": {quote(question)}" if question else "")
    return f"{what} is {str(p.get('task_status', '?')).replace('_', ' ')}"


Sentence = Callable[[Memory, Lookup, dict[str, Any]], str]


def _p(event: dict[str, Any]) -> dict[str, Any]:
    return event.get("payload") or {}


#: One sentence per event type (``events#EventType``; tests/e2e/test_cli_messages.py checks the list is whole).
SENTENCES: dict[str, Sentence] = {
    "invitation.created": lambda m, _, e: f"{m.who(e)} invited {_p(e).get('participant')} ({_caps(_p(e))}), "
                                          f"the invitation good until {clock(_p(e).get('expires_at'))}",
    "invitation.revoked": lambda m, _, e: f"{m.who(e)} revoked an invitation",
    "participant.joined": lambda m, _, e: f"{(_p(e).get('participant') or {}).get('name', 'someone')} joined the room",
    "session.opened": lambda m, _, e: f"{_p(e).get('participant')} opened a session ({_caps(_p(e))})",
    # only the owner revokes; the event's actor is the session revoked
    "session.revoked": lambda m, _, e: "the operator revoked "
                                       + (f"{m.sessions.get(_p(e).get('session_id') or '') or m.who(e)}'s session"
                                          if (e.get("actor") or {}).get("participant_id") else "a session"),
    "version.committed": _version,
    "document.external_edit": lambda m, _, e: f"the file was edited outside the room: now v{_p(e).get('version')}",
    "document.external_edit_rejected": lambda m, _, e: (
        f"an edit of the file outside the room was set aside ({_p(e).get('reason')})"
        + (f", saved as {_p(e)['saved_as']}" if _p(e).get("saved_as") else "")
        + f"; the document stays v{_p(e).get('head_version')}"),
    "lease.acquired": lambda m, _, e: f"{m.who(e)} leased {lines(_p(e).get('lines')) or 'a region'} until "
                                      f"{clock(_p(e).get('expires_at'))}",
    "lease.renewed": lambda m, _, e: f"{m.who(e)} kept {m.leases.get(_p(e).get('lease_id', ''), 'a lease')} until "
                                     f"{clock(_p(e).get('expires_at'))}",
    "lease.released": lambda m, _, e: f"{_p(e).get('by') or m.who(e)} released "
                                      f"{m.leases.get(_p(e).get('lease_id', ''), 'a lease')}",
    "lease.expired": lambda m, _, e: f"{m.sessions.get(_p(e).get('session_id') or '', 'a')}'s lease on "
                                     f"{m.leases.get(_p(e).get('lease_id', ''), 'a region')} expired"
                                     if _p(e).get("session_id") in m.sessions else
                                     f"a lease on {m.leases.get(_p(e).get('lease_id', ''), 'a region')} expired",
    "proposal.created": lambda m, _, e: (
        f"{m.who(e)} proposed a change to {lines(_p(e).get('lines')) or 'the document'} of v{_p(e).get('base_version')}"
        + (f" (rebased from v{_p(e)['rebased_from']})" if _p(e).get("rebased_from") else "")
        + (f": {quote(_p(e)['summary'])}" if _p(e).get("summary") else "")),
    "proposal.approved": lambda m, lk, e: f"{_p(e).get('approved_by') or m.who(e)} approved "
                                          f"{_proposal(m, lk, _p(e))}: now v{_p(e).get('version')}",
    "proposal.rejected": lambda m, lk, e: f"{_p(e).get('by') or m.who(e)} rejected {_proposal(m, lk, _p(e))}"
                                          + _reason(_p(e)),
    "proposal.withdrawn": lambda m, lk, e: f"{_p(e).get('by') or m.who(e)} withdrew {_proposal(m, lk, _p(e))}",
    "board.message_posted": _posted,
    "board.message_resolved": _resolved,
    "handoff.created": lambda m, lk, e: f"{_p(e).get('owner') or m.who(e)} handed off "
                                        f"{quote(_p(e).get('summary'))} to {_p(e).get('assignee') or 'anyone'}",
    "handoff.accepted": lambda m, lk, e: f"{_p(e).get('assignee') or m.who(e)} accepted {_handoff(m, lk, _p(e))}",
    "handoff.input_requested": _asked,
    "handoff.input_received": _answered,
    "handoff.completed": _completed,
    "handoff.approved": lambda m, lk, e: f"{_p(e).get('by') or m.who(e)} approved the result of {_handoff(m, lk, _p(e))}",
    "handoff.rejected": lambda m, lk, e: f"{_p(e).get('by') or m.who(e)} rejected the result of "
                                         f"{_handoff(m, lk, _p(e))}" + _reason(_p(e)),
    "handoff.cancelled": lambda m, lk, e: f"{_p(e).get('by') or m.who(e)} cancelled {_handoff(m, lk, _p(e))}"
                                          + _reason(_p(e)),
    "task.updated": _task,
}


def sentence(event: dict[str, Any], memory: Memory, lookup: Lookup) -> str:
    """The sentence of one event (what it says, for people), after :meth:`Memory.learn` of it."""
    memory.learn(event)
    known = SENTENCES.get(str(event.get("type")))
    if known is not None:
        try:
            return known(memory, lookup, event)
        except (TypeError, KeyError, IndexError, AttributeError, ValueError):
            pass
    return f"{event.get('type')} by {memory.who(event)}"


def encoded(event: dict[str, Any]) -> str:
    """The event as one JSON line (``ce observe --json``)."""
    return json.dumps(event, ensure_ascii=False)
