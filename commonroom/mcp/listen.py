"""``subscriptions/listen``: the one POST answered with a stream (DESIGN.md).

Params (``schema/mcp.json#/$defs/ListenParams``): ``notifications``, a
``SubscriptionFilter``. The answer is a ``text/event-stream`` on the
room's stream primitive (:class:`~commonroom.mcp.stream.HubStream`):

1. ``notifications/subscriptions/acknowledged`` first, whose
   ``notifications`` lists only what will be sent:
   ``resourceSubscriptions`` kept only for a session holding ``read`` and
   only the subscribable workspace URIs (those ``resources/subscribe``
   takes); ``taskIds`` only those ``tasks/get`` would answer for this
   session (asking for ``taskIds`` without declaring the tasks extension is
   -32021, as ``tasks/*`` are). The three list-changed flags are never
   acknowledged: the catalogs do not change.
2. then ``notifications/resources/updated {uri}`` (once per URI per batch of
   events) and ``notifications/tasks`` (the task as ``tasks/get`` answers
   it, once per task per batch, after every ``handoff.*`` event that changes
   a listed task, and every ``task.updated`` of a task-running tool's task);
3. every message carries ``_meta["io.modelcontextprotocol/subscriptionId"]``
   = the listen's request id.

The stream ends when the client closes it (nothing more is sent), on
``notifications/cancelled`` for its request id, when the session is
revoked or expires, on lag (a lagged listener is dropped; nothing from the
gap is replayed) and at shutdown, each with the final listen result
``{resultType: "complete", _meta: {subscriptionId}}``; when the filter,
after authorization, leaves nothing to deliver, right after the ack with
that result.
"""

from __future__ import annotations

from typing import Any, AsyncIterator

from ..errors import CommonroomError
from ..protocol import TASKS_EXTENSION
from .dispatch import SERVER_INFO
from .jsonrpc import META_SERVER_INFO, META_SUBSCRIPTION_ID, missing_capability, notification
from .registry import Context, Registry, Stream
from .resources import SUBSCRIBABLE, uris_for_event
from .stream import UPDATED, HubStream, McpEncoder
from .tasks import official

ACKNOWLEDGED = "notifications/subscriptions/acknowledged"
TASKS = "notifications/tasks"
#: ``handoff.*`` events that do not change the task (the decision is the handoff's alone).
NOT_TASK_CHANGES = frozenset({"handoff.approved", "handoff.rejected"})
#: The event of every change of a task-running tool's task (:mod:`.tooltasks`).
TASK_UPDATED = "task.updated"


def _visible_tasks(ctx: Context, task_ids: list[Any]) -> list[str]:
    kept: list[str] = []
    for task_id in task_ids:
        if not isinstance(task_id, str) or task_id in kept:
            continue
        try:
            ctx.engine.task_get(ctx.actor, task_id)
        except CommonroomError:
            continue
        kept.append(task_id)
    return kept


def _readable_uris(ctx: Context, uris: list[Any]) -> list[str]:
    if "read" not in ctx.actor.capabilities:
        return []
    kept: list[str] = []
    for uri in uris:
        if uri in SUBSCRIBABLE and uri not in kept:
            kept.append(uri)
    return kept


def listen(ctx: Context) -> Stream:
    """``subscriptions/listen`` (params already match ``mcp#ListenParams``)."""
    asked = ctx.params["notifications"]
    if "taskIds" in asked and not ctx.declared("extensions", TASKS_EXTENSION):
        raise missing_capability({"extensions": {TASKS_EXTENSION: {}}})
    request_id = ctx.request_id
    tag = {META_SUBSCRIPTION_ID: request_id}
    agreed: dict[str, Any] = {}
    uris = _readable_uris(ctx, list(asked.get("resourceSubscriptions") or ()))
    task_ids = _visible_tasks(ctx, list(asked.get("taskIds") or ())) if "taskIds" in asked else []
    if "resourceSubscriptions" in asked:
        agreed["resourceSubscriptions"] = uris
    if "taskIds" in asked:
        agreed["taskIds"] = task_ids
    ack = notification(ACKNOWLEDGED, {"_meta": dict(tag), "notifications": agreed})

    def final(reason: str) -> dict[str, Any]:
        return {"jsonrpc": "2.0", "id": request_id,
                "result": {"resultType": "complete", "_meta": {**tag, META_SERVER_INFO: SERVER_INFO}}}

    if not uris and not task_ids:
        async def ack_then_end() -> AsyncIterator[dict[str, Any] | None]:
            yield ack
            yield final("nothing")

        return Stream(ack_then_end())

    uri_set, task_set = frozenset(uris), frozenset(task_ids)
    engine, actor = ctx.engine, ctx.actor

    def task_of(event: dict[str, Any]) -> str | None:
        kind = str(event.get("type", ""))
        if kind != TASK_UPDATED and (not kind.startswith("handoff.") or kind in NOT_TASK_CHANGES):
            return None
        task_id = (event.get("payload") or {}).get("task_id")
        return task_id if task_id in task_set else None

    def accept(event: dict[str, Any]) -> bool:
        return task_of(event) is not None or any(u in uri_set for u in uris_for_event(str(event.get("type", ""))))

    def to_messages(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
        updated: dict[str, None] = {}
        tasks: dict[str, None] = {}
        for event in events:
            updated.update(dict.fromkeys(u for u in uris_for_event(str(event.get("type", ""))) if u in uri_set))
            task_id = task_of(event)
            if task_id is not None:
                tasks[task_id] = None
        out = [notification(UPDATED, {"_meta": dict(tag), "uri": uri}) for uri in updated]
        for task_id in tasks:
            try:
                task = engine.task_get(actor, task_id)
            except CommonroomError:  # deleted by the TTL sweep meanwhile
                continue
            out.append(notification(TASKS, {**official(task), "_meta": dict(tag)}))
        return out

    return HubStream(McpEncoder(to_messages, first=[ack], final=final), accept=accept)


def register_listen(registry: Registry) -> None:
    """Add ``subscriptions/listen``."""
    registry.add_method("subscriptions/listen", listen, params_schema="mcp#ListenParams")


__all__ = ["register_listen", "listen"]
