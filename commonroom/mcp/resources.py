"""commonroom's resources, the version template, and ``resources/subscribe``.

Resources (all need ``read``; each read is one engine call):

============================================  ==================  ======================
URI                                           mimeType            engine call
============================================  ==================  ======================
``commonroom://workspace/status``             application/json    ``room_status``
``commonroom://workspace/document``           text/markdown       ``document``
``commonroom://workspace/proposals``          application/json    ``proposals``
``commonroom://workspace/leases``             application/json    ``leases``
``commonroom://workspace/participants``       application/json    ``participants``
``commonroom://workspace/versions/{number}``  text/markdown       ``version`` (template)
``<list URI>?cursor={cursor}``                application/json    the next page (templates)
============================================  ==================  ======================

Every list is paged (docs/protocol.md): the three list resources
(proposals, leases, participants) read the first page of up to
:data:`PAGE` items with ``next_cursor``; the template
``<list URI>?cursor={cursor}`` reads the page after that cursor, so a
client follows ``next_cursor`` by reading a URI, as a tool caller passes it
to ``proposals_list`` / ``leases_list`` / ``participants_list``.

Reads are workspace state: ``cacheScope: "private"``, ``ttlMs: 0``.

``resources/subscribe`` / ``resources/unsubscribe`` ``{uri}`` (kept by the
seed; removed from the official revision) take one of the five URIs above
and need ``read``. Subscriptions live in memory per session
(:class:`Subscriptions`); ``GET /mcp`` (``stream.py``) turns committed
events into ``notifications/resources/updated`` for them
(:func:`uris_for_event`).
"""

from __future__ import annotations

from typing import Any, Callable

from ..engine import require
from .. import numbers
from ..errors import InvalidRequest
from .jsonrpc import invalid_params
from .registry import Context, Registry

BASE = "commonroom://workspace/"
STATUS = BASE + "status"
DOCUMENT = BASE + "document"
PROPOSALS = BASE + "proposals"
LEASES = BASE + "leases"
PARTICIPANTS = BASE + "participants"
VERSION_TEMPLATE = BASE + "versions/{number}"
#: Items per page of a list resource (the most a list gives, seed protocol.txt).
PAGE = 200
#: Suffix of a list resource's next-page template.
CURSOR_SUFFIX = "?cursor={cursor}"

#: The URIs ``resources/subscribe`` accepts (seed protocol.txt, MCP).
SUBSCRIBABLE = (STATUS, DOCUMENT, PROPOSALS, LEASES, PARTICIPANTS)


def uris_for_event(event_type: str) -> tuple[str, ...]:
    """The resources an event of ``event_type`` changes (empty: none)."""
    if event_type == "version.committed":
        return (DOCUMENT, STATUS)
    if event_type.startswith("proposal."):
        return (PROPOSALS,)
    if event_type.startswith("lease."):
        return (LEASES,)
    if event_type == "participant.joined" or event_type.startswith("session."):
        return (PARTICIPANTS, STATUS)
    return ()


class Subscriptions:
    """session id → subscribed URIs, in memory (gone when the room stops)."""

    def __init__(self) -> None:
        self._by_session: dict[str, set[str]] = {}

    def add(self, session_id: str, uri: str) -> None:
        """Subscribe ``session_id`` to ``uri``."""
        self._by_session.setdefault(session_id, set()).add(uri)

    def remove(self, session_id: str, uri: str) -> None:
        """Unsubscribe (no error when it was not subscribed)."""
        uris = self._by_session.get(session_id)
        if uris is not None:
            uris.discard(uri)
            if not uris:
                del self._by_session[session_id]

    def uris(self, session_id: str | None) -> frozenset[str]:
        """The URIs ``session_id`` is subscribed to."""
        return frozenset(self._by_session.get(session_id or "", ()))

    def wants(self, session_id: str | None, event: dict[str, Any]) -> tuple[str, ...]:
        """The subscribed URIs ``event`` changes, in a stable order."""
        subscribed = self._by_session.get(session_id or "")
        if not subscribed:
            return ()
        return tuple(u for u in uris_for_event(str(event.get("type", ""))) if u in subscribed)


def _document(ctx: Context) -> list[dict[str, Any]]:
    doc = ctx.engine.document(ctx.actor)
    return [{"uri": DOCUMENT, "mimeType": "text/markdown", "text": doc["text"],
             "_meta": {"commonroom/version": doc["version"], "commonroom/content_hash": doc["content_hash"]}}]


def _version(ctx: Context) -> list[dict[str, Any]]:
    try:
        number = numbers.natural(ctx.variables.get("number", ""), minimum=1)
    except numbers.NotANumber as exc:
        raise InvalidRequest(f"version number {exc}", details={"parameter": "number"}) from None
    version = ctx.engine.version(ctx.actor, number)
    meta = {"commonroom/version": version.get("number", number)}
    if "content_hash" in version:
        meta["commonroom/content_hash"] = version["content_hash"]
    return [{"uri": ctx.uri, "mimeType": "text/markdown", "text": version.get("text", ""), "_meta": meta}]


Page = Callable[[Context, "str | None"], Any]


def _first_page(page: Page) -> Callable[[Context], Any]:
    return lambda ctx: page(ctx, None)


def _next_page(page: Page) -> Callable[[Context], Any]:
    return lambda ctx: page(ctx, ctx.variables.get("cursor", ""))


def register_resources(registry: Registry, subscriptions: Subscriptions) -> None:
    """Add the workspace resources, the version template and subscribe/unsubscribe."""
    add = registry.add_resource
    add(STATUS, name="workspace_status", title="Room status", mime_type="application/json",
        description="The room: workspace id, file name, head version, participant and session counts.",
        read=lambda c: c.engine.room_status(c.actor))
    add(DOCUMENT, name="workspace_document", title="The document", mime_type="text/markdown",
        description="The head version of the markdown document (its number in _meta commonroom/version).",
        read=_document)
    lists: tuple[tuple[str, str, str, str, Page], ...] = (
        (PROPOSALS, "proposals", "Proposals", "proposals, oldest first (a ProposalsPage)",
         lambda c, cursor: c.engine.proposals(c.actor, None, PAGE, cursor)),
        (LEASES, "leases", "Leases", "live leases, oldest acquired first (a LeasesPage)",
         lambda c, cursor: c.engine.leases(c.actor, PAGE, cursor)),
        (PARTICIPANTS, "participants", "Participants", "participants in join order (a ParticipantsPage)",
         lambda c, cursor: c.engine.participants(c.actor, PAGE, cursor)),
    )
    for uri, name, title, what, page in lists:
        add(uri, name=f"workspace_{name}", title=title, mime_type="application/json",
            description=f"The first page of up to {PAGE} {what}; read "
                        f"{uri}?cursor=<next_cursor> for the next.",
            read=_first_page(page))
        registry.add_template(uri + CURSOR_SUFFIX, name=f"workspace_{name}_page", title=f"{title}, next page",
                              mime_type="application/json",
                              description=f"The page of {what} after {{cursor}} (a next_cursor).",
                              read=_next_page(page))
    registry.add_template(VERSION_TEMPLATE, name="workspace_version", title="A version of the document",
                          mime_type="text/markdown",
                          description="The whole document as committed in version {number}.",
                          read=_version)

    def subscribe(ctx: Context) -> dict[str, Any]:
        uri = _subscribable(ctx)
        subscriptions.add(ctx.actor.session_id, uri)
        return {}

    def unsubscribe(ctx: Context) -> dict[str, Any]:
        uri = _subscribable(ctx)
        subscriptions.remove(ctx.actor.session_id, uri)
        return {}

    registry.add_method("resources/subscribe", subscribe, params_schema="mcp#UriParams")
    registry.add_method("resources/unsubscribe", unsubscribe, params_schema="mcp#UriParams")


def _subscribable(ctx: Context) -> str:
    require(ctx.actor, "read")
    uri = ctx.params.get("uri")
    if uri not in SUBSCRIBABLE:
        raise invalid_params("not a subscribable resource", {"uri": uri, "subscribable": list(SUBSCRIBABLE)})
    return uri
