"""The readable form of the handoff and task answers ``ce`` prints (registered in :mod:`commonroom.cli.printing`,
as the other shapes in :mod:`commonroom.cli.render_shapes`): a handoff's line, its detail with its task's
questions, answers and result, its events, and the handoffs page.
"""

from __future__ import annotations

import json
from typing import Any

from .printing import DETAIL_WIDTH, detail, line, name_of, outcome, renders, short, table, when


@renders("handoffs#Handoff")
def handoff(answer: dict[str, Any]) -> None:
    """``handoff ho_… open: summary (owner alice, assignee bob)``."""
    outcome(f"handoff {answer['id']} {answer['status']}: {answer.get('summary', '')} "
            f"(owner {name_of(answer.get('owner'))}, assignee {name_of(answer.get('assignee'))})")


@renders("handoffs#HandoffAndTask")
def handoff_and_task(answer: dict[str, Any]) -> None:
    """The handoff's line, then its task's id and status."""
    handoff(answer["handoff"])
    task = answer.get("task") or {}
    line(f"task {task.get('taskId', '-')} {task.get('status', '')}")


@renders("handoffs#Task")
def task(answer: dict[str, Any]) -> None:
    """The task: status, handoff, who, the open input requests and the answers given, its result or error."""
    from rich.text import Text

    title = Text(f"task {answer.get('taskId')}", style="bold")
    title.append(f" · {answer.get('status')}")
    owner, assignee = answer.get("owner"), answer.get("assignee")
    error = answer.get("error") or {}
    detail(title, [
        ("handoff", answer.get("handoffId") or answer.get("operation")),
        ("who", f"owner {owner}, assignee {assignee or '-'}"),
        ("message", None if answer.get("inputRequests") else answer.get("statusMessage")),
        *((f"asked {key}", _question(request) + _answer_hint(answer, key))
          for key, request in (answer.get("inputRequests") or {}).items()),
        *((f"answered {key}", _answer(value)) for key, value in (answer.get("inputResponses") or {}).items()),
        ("result", _tool_result(answer.get("result"))),
        ("error", f"{error.get('message')} ({error.get('code')})" if error else None),
        ("updated", f"{when(answer.get('lastUpdatedAt'))} (created {when(answer.get('createdAt'))})"),
    ])


def _answer_hint(task: dict[str, Any], key: str) -> str:
    """`` (ce task answer task_… ANSWER --key K)`` with the session the caller used; nothing for the local
    operator (``ce task answer`` takes no FILE)."""
    from .sessions import session_option

    option = session_option()
    return "" if option is None else f" (ce task answer {short(task.get('taskId'))} ANSWER --key {key}{option})"


def _question(request: Any) -> str:
    """The text of an ``elicitation/create`` input request."""
    params = request.get("params") if isinstance(request, dict) else None
    return str((params or {}).get("message") or json.dumps(request, ensure_ascii=False))


def _answer(value: Any) -> str:
    """An input response as given: ``{"answer": "yes"}`` is ``yes``, anything else compact JSON."""
    if isinstance(value, dict) and list(value) == ["answer"] and isinstance(value["answer"], str):
        return value["answer"]
    if isinstance(value, dict) and value.get("action") and isinstance(value.get("content"), dict):
        value = value["content"]  # an MCP ElicitResult
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _tool_result(result: Any) -> str | None:
    """The text of a finished CallToolResult (its text content), None when there is none."""
    if not isinstance(result, dict):
        return None
    texts = [c.get("text") for c in result.get("content") or [] if isinstance(c, dict) and c.get("type") == "text"]
    return "\n".join(t for t in texts if t) or None


def handoff_detail(answer: dict[str, Any], task: dict[str, Any] | None) -> None:
    """``ce handoff``: the handoff (who, summary, constraints, artifacts, result, decision) and its task's status
    with the open input requests, fitting :data:`~commonroom.cli.render.DETAIL_WIDTH` columns."""
    from rich.text import Text

    title = Text(f"handoff {answer['id']}", style="bold")
    title.append(f" · {answer['status']}")
    task_line = None
    if task is not None:
        task_line = f"{task.get('taskId')} {task.get('status')}"
        if task.get("inputRequests"):
            count = len(task["inputRequests"])
            task_line += f", {count} question{'s' if count > 1 else ''} open"
    elif answer.get("task_id"):
        task_line = f"{answer['task_id']} (expired)"
    decided = None
    if answer.get("decided_at"):
        decided = f"{answer['status']} by {name_of(answer.get('decided_by'))} {when(answer['decided_at'])}"
    detail(title, [
        ("summary", answer.get("summary")),
        ("who", f"owner {name_of(answer.get('owner'))}, assignee {name_of(answer.get('assignee'))}"),
        ("constraints", answer.get("constraints")),
        *(("artifact", _artifact(a)) for a in answer.get("artifacts") or []),
        ("task", task_line),
        *((f"asked {key}", _question(request)) for key, request in ((task or {}).get("inputRequests") or {}).items()),
        *((f"answered {key}", _answer(value)) for key, value in ((task or {}).get("inputResponses") or {}).items()),
        ("result", answer.get("result")),
        ("decided", decided),
        ("reason", answer.get("reason")),
        ("created", when(answer.get("created_at"))),
        ("updated", when(answer.get("updated_at"))),
    ])


def _artifact(ref: dict[str, Any]) -> str:
    """``uri (title, media type)``."""
    extra = ", ".join(str(ref[k]) for k in ("title", "media_type") if ref.get(k))
    return str(ref.get("uri")) + (f" ({extra})" if extra else "")


@renders("handoffs#HandoffsPage")
def handoffs(answer: dict[str, Any]) -> None:
    """Handoffs, oldest first."""
    table(answer["handoffs"], [
        ("id", lambda h: short(h["id"])),
        ("status", lambda h: h["status"]),
        ("who", lambda h: name_of(h.get("owner"))),
        ("assignee", lambda h: name_of(h.get("assignee"))),
        ("when", lambda h: when(h.get("updated_at") or h.get("created_at"))),
        ("summary", lambda h: h.get("summary") or ""),
    ], "no handoffs", answer.get("next_cursor"))


def handoff_events(answer: dict[str, Any], names: dict[str, str]) -> None:
    """A handoff's own events, oldest first: who by name, what changed, at most 100 columns."""
    table(answer["events"], [
        ("#", lambda e: e.get("id")),
        ("event", lambda e: str(e.get("type", "")).removeprefix("handoff.")),
        ("when", lambda e: when(e.get("time"))),
        ("who", lambda e: _actor(e, names)),
        ("summary", _handoff_change),
    ], "no events", answer.get("next_cursor"), DETAIL_WIDTH)


def _actor(event: dict[str, Any], names: dict[str, str]) -> str:
    pid = (event.get("actor") or {}).get("participant_id")
    return names.get(pid, short(pid)) if pid else "operator"


def _handoff_change(event: dict[str, Any]) -> str:
    """What a handoff event changed: the handoff's and the task's status, and what the event carries."""
    payload = event.get("payload") or {}
    parts = [f"handoff {payload['status']}" if payload.get("status") else "",
             f"task {payload['task_status']}" if payload.get("task_status") else ""]
    if event.get("type") == "handoff.created":
        parts.append(f"for {payload.get('assignee') or 'anyone'}: {payload.get('summary', '')}")
    if payload.get("keys"):
        parts.append("input " + ", ".join(str(k) for k in payload["keys"]))
    for key in ("reason", "decided_by"):
        if payload.get(key):
            parts.append(f"{key.replace('_', ' ')} {payload[key]}")
    return "; ".join(p for p in parts if p)
