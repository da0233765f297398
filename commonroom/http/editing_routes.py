"""HTTP routes of editing: document regions, versions, diff, leases, proposals, writes.

Each handler is one engine call (issue 3). Paths::

    GET    /workspace/document?region=<json>     read the head or a region (read)
    PUT    /workspace/document                   direct write (write)
    GET    /workspace/versions?limit&cursor      list, newest first (read)
    GET    /workspace/versions/{number}          one version with its text (read)
    GET    /workspace/diff?from=A&to=B           unified diff (read)
    GET    /workspace/leases                     live leases (read or lease)
    POST   /workspace/leases                     acquire (lease)
    POST   /workspace/leases/{lease_id}/renew    renew (lease)
    DELETE /workspace/leases/{lease_id}          release (lease)
    GET    /workspace/proposals?status&limit&cursor
    POST   /workspace/proposals                  create (propose)
    GET    /workspace/proposals/{proposal_id}
    POST   /workspace/proposals/{proposal_id}/approve   (approve)
    POST   /workspace/proposals/{proposal_id}/reject    (approve)
    POST   /workspace/proposals/{proposal_id}/withdraw  (propose, author)
"""

from __future__ import annotations

from typing import Any

from .. import jsontext
from ..engine import Engine
from ..errors import InvalidRequest
from .endpoint import Call, Endpoint, Method


def _region_arg(call: Call) -> Any:
    raw = call.arg("region")
    if raw in (None, ""):
        return None
    try:
        return jsontext.loads(raw)
    except jsontext.NotJson:
        raise InvalidRequest("region must be JSON, e.g. {\"heading\": [\"Design\"]}",
                             details={"parameter": "region"}) from None


def _read_document(call: Call) -> Any:
    return call.engine.document(call.actor, _region_arg(call))


def _write(call: Call) -> Any:
    b = call.body
    return call.engine.write(call.actor, b["expected_version"], b["text"], b.get("region"), b.get("summary", ""))


def _acquire(call: Call) -> Any:
    return 201, call.engine.acquire_lease(call.actor, call.body.get("region"), call.body.get("ttl_seconds"))


def _propose(call: Call) -> Any:
    b = call.body
    return 201, call.engine.create_proposal(call.actor, b["base_version"], b.get("region"), b["text"],
                                            b.get("summary", ""))


def editing_routes(engine: Engine) -> dict[str, Endpoint]:
    """The editing routes (same on the ingress and, as the operator, the owner port)."""
    return {
        "/workspace/document": Endpoint(
            engine,
            get=Method(_read_document, answer="room#Document", capability="read",
                       summary="The head document, or one region of it", query=("region",)),
            put=Method(_write, "editing#WriteRequest", answer="editing#VersionInfo", capability="write",
                       summary="Replace the document or a region if the head is expected_version")),
        "/workspace/versions": Endpoint(engine, get=Method(
            lambda c: c.engine.versions(c.actor, c.arg("limit"), c.arg("cursor")),
            answer="editing#VersionsPage", capability="read", summary="Versions, newest first",
            query=("limit", "cursor"))),
        "/workspace/versions/{number}": Endpoint(engine, get=Method(
            lambda c: c.engine.version(c.actor, c.params["number"]),
            answer="editing#VersionInfo", capability="read", summary="One version, with its text")),
        "/workspace/diff": Endpoint(engine, get=Method(
            lambda c: c.engine.diff(c.actor, c.arg("from"), c.arg("to")),
            answer="editing#Diff", capability="read", summary="Unified diff between two versions",
            query=("from", "to"))),
        "/workspace/leases": Endpoint(
            engine,
            get=Method(lambda c: c.engine.leases(c.actor), answer="editing#LeaseList", capability="read",
                       summary="Live leases (read or lease)"),
            post=Method(_acquire, "editing#LeaseRequest", answer="editing#Lease", status=201,
                        capability="lease", summary="Lease a region for a TTL")),
        "/workspace/leases/{lease_id}/renew": Endpoint(engine, post=Method(
            lambda c: c.engine.renew_lease(c.actor, c.params["lease_id"], c.body.get("ttl_seconds")),
            "editing#LeaseRenewRequest", answer="editing#Lease", capability="lease",
            summary="Renew a lease of this session")),
        "/workspace/leases/{lease_id}": Endpoint(engine, delete=Method(
            lambda c: c.engine.release_lease(c.actor, c.params["lease_id"]),
            answer="editing#Lease", capability="lease", summary="Release a lease of this session")),
        "/workspace/proposals": Endpoint(
            engine,
            get=Method(lambda c: c.engine.proposals(c.actor, c.arg("status"), c.arg("limit"), c.arg("cursor")),
                       answer="editing#ProposalsPage", capability="read", summary="Proposals, oldest first",
                       query=("status", "limit", "cursor")),
            post=Method(_propose, "editing#ProposalRequest", answer="editing#Proposal", status=201,
                        capability="propose", summary="Propose text for a region as seen at base_version")),
        "/workspace/proposals/{proposal_id}": Endpoint(engine, get=Method(
            lambda c: c.engine.proposal(c.actor, c.params["proposal_id"]),
            answer="editing#Proposal", capability="read", summary="One proposal")),
        "/workspace/proposals/{proposal_id}/approve": Endpoint(engine, post=Method(
            lambda c: c.engine.approve_proposal(c.actor, c.params["proposal_id"]),
            answer="editing#ApproveResult", capability="approve", summary="Approve: commit the next version")),
        "/workspace/proposals/{proposal_id}/reject": Endpoint(engine, post=Method(
            lambda c: c.engine.reject_proposal(c.actor, c.params["proposal_id"], c.body.get("reason")),
            "editing#ProposalDecision", answer="editing#Proposal", capability="approve",
            summary="Reject a proposal")),
        "/workspace/proposals/{proposal_id}/withdraw": Endpoint(engine, post=Method(
            lambda c: c.engine.withdraw_proposal(c.actor, c.params["proposal_id"]),
            answer="editing#Proposal", capability="propose", summary="Withdraw your own proposal")),
    }
