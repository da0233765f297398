"""The route table: path → handlers, for the session ingress and the owner port.

Every handler is one engine call. The owner port serves the same
``/workspace/*`` routes as the operator, plus ``/owner/*``.
"""

from __future__ import annotations

from typing import Any

from ..engine import Engine
from .editing_routes import editing_routes
from .endpoint import Call, Endpoint, Method


def _join(call: Call) -> Any:
    return 201, call.engine.join(call.body["invitation"], call.body.get("client"))


def _invite(call: Call) -> Any:
    body = call.body
    kwargs = {k: body[k] for k in ("expires_in_seconds", "session_ttl_seconds") if k in body}
    return 201, call.engine.invite(body["participant"], body["capabilities"], body.get("transport", "loopback"), **kwargs)


def _revoke(call: Call) -> Any:
    return call.engine.revoke(
        invitation_ref=call.body.get("invitation"), session_id=call.body.get("session")
    )


def workspace_routes(engine: Engine) -> dict[str, Endpoint]:
    """Routes a session (or the operator) calls."""
    return {
        "/workspace/room": Endpoint(engine, get=Method(
            lambda c: c.engine.room_status(c.actor), answer="room#RoomStatus", capability="read",
            summary="Room status: workspace, file, head version, counts, last event id")),
        "/workspace/participants": Endpoint(engine, get=Method(
            lambda c: c.engine.participants(c.actor, c.arg("limit"), c.arg("cursor")),
            answer="room#ParticipantsPage", capability="read", summary="Participants, paged",
            query=("limit", "cursor"))),
        "/workspace/history": Endpoint(engine, get=Method(
            lambda c: c.engine.history(c.actor, c.arg("limit"), c.arg("cursor")),
            answer="events#HistoryPage", capability="read", summary="Events still in the ring, paged",
            query=("limit", "cursor"))),
        **editing_routes(engine),
    }


def ingress_routes(engine: Engine) -> dict[str, Endpoint]:
    """The session ingress: join (public), the session itself, workspace routes."""
    return {
        "/workspace/join": Endpoint(engine, public=True, post=Method(
            _join, "join#JoinRequest", answer="join#JoinResult", status=201,
            summary="Redeem an invitation (single use) for a session")),
        "/workspace/session": Endpoint(engine, get=Method(
            lambda c: c.engine.session_info(c.actor), answer="common#Session",
            summary="The calling session")),
        **workspace_routes(engine),
    }


def owner_routes(engine: Engine) -> dict[str, Endpoint]:
    """The owner port: operator routes plus workspace routes as the operator."""
    return {
        "/owner/invitations": Endpoint(engine, post=Method(
            _invite, "owner#InviteRequest", answer="owner#InviteResult", status=201,
            summary="Make an invitation (owner token)")),
        "/owner/revoke": Endpoint(engine, post=Method(
            _revoke, "owner#RevokeRequest", answer="owner#RevokeResult",
            summary="Revoke an invitation or a session (owner token)")),
        **workspace_routes(engine),
    }
