"""The one error catalogue (seed ``protocol.txt``, section HTTP).

Every error a participant can see is a :class:`CommonroomError`. It renders
as the seed's JSON envelope::

    {"error": "<code>", "message": "<text>", "details": {...},
     <recovery fields at top level when they apply>}

The recovery fields are exactly the seed's list (:data:`RECOVERY_FIELDS`).
The code → HTTP status table is read from ``schema/error.json`` (:data:`STATUS`); the
HTTP handler, the MCP mapper and the ``ce`` exit codes all read it.

Tree::

    CommonroomError
    ├── Unauthorized            unauthorized          401
    ├── PermissionDenied        permission_denied     403
    ├── InvitationExpired       invitation_expired    403
    ├── InvitationRevoked       invitation_revoked    403
    ├── InvitationRedeemed      invitation_redeemed   403
    ├── UnsupportedVersion      unsupported_version   400
    ├── SessionExpired          session_expired       401
    ├── LeaseConflict           lease_conflict        409
    ├── StaleVersion            stale_version         409
    ├── ProposalNotFound        proposal_not_found    404
    ├── ProposalConflict        proposal_conflict     409
    ├── InvalidRegion           invalid_region        400
    ├── VersionNotFound         version_not_found     404
    ├── TransportUnavailable    transport_unavailable 503
    ├── LimitExceeded           limit_exceeded        429 (413 for a body)
    ├── InvalidRequest          invalid_request       400
    ├── NotFound                not_found             404 (routes and records
    │                                                 the seed names no code for)
    ├── MethodNotAllowed        method_not_allowed    405 (ours: a route asked with
    │                                                 a method it does not serve)
    ├── HandoffNotFound         handoff_not_found     404 (also a task this session
    │                                                 may not see: nothing revealed)
    ├── HandoffConflict         handoff_conflict      409 (a transition the state
    │                                                 does not allow; details.status)
    ├── IdempotencyMismatch     idempotency_mismatch  409 (same idempotency_key,
    │                                                 different request)
    ├── MessageNotFound         message_not_found     404 (boards)
    ├── PeerNotFound            peer_not_found        404
    ├── AssignmentStale         assignment_stale      409
    ├── AssignmentHistoryLost   assignment_history_lost 409
    ├── AssignmentTooLarge      assignment_too_large  409
    ├── CompletionMismatch      completion_mismatch   409
    ├── CompletionPersistenceUncertain completion_persistence_uncertain 503
    └── StorageUnavailable      storage_unavailable   503 (ours: the sidecar cannot
                                                      take the write: disk full,
                                                      read-only, files gone)
"""

from __future__ import annotations

from typing import Any

from .vocabulary import ERROR_STATUS

#: Recovery fields, in the seed's order. Only these may appear at top level.
RECOVERY_FIELDS: tuple[str, ...] = (
    "base_version",
    "current_version",
    "expected_version",
    "diff",
    "changes",
    "retry_after_seconds",
    "lease_id",
    "proposal_id",
    "region",
)

#: code → HTTP status, the seed's table (``not_found`` is ours, see docs): ``error#ErrorCode`` and its
#: ``x-http-status`` in ``schema/error.json`` (:mod:`commonroom.vocabulary`), in the catalogue's order. A code
#: is appended there, never inserted, so earlier ``ce`` exit statuses keep their numbers.
STATUS: dict[str, int] = ERROR_STATUS

#: code → distinct non-zero exit status of ``ce`` (1 is a generic failure).
EXIT_CODES: dict[str, int] = {code: 10 + i for i, code in enumerate(STATUS)}


class CommonroomError(Exception):
    """An error with a seed code, a message, details and recovery fields.

    ``recovery`` keys must be in :data:`RECOVERY_FIELDS` (``ValueError``
    otherwise, a programming error). ``status`` overrides the table only where
    the seed allows it (413 for an oversized body) and for the edge's 421 (a
    ``Host`` that names another server: ``commonroom.http.edge``).
    """

    code: str = "invalid_request"

    def __init__(
        self,
        message: str,
        *,
        details: dict[str, Any] | None = None,
        status: int | None = None,
        **recovery: Any,
    ) -> None:
        super().__init__(message)
        unknown = set(recovery) - set(RECOVERY_FIELDS)
        if unknown:
            raise ValueError(f"not recovery fields: {sorted(unknown)}")
        self.message = message
        self.details = details or {}
        self.recovery = {k: v for k, v in recovery.items() if v is not None}
        self.status = status or STATUS[self.code]

    def to_dict(self) -> dict[str, Any]:
        """The wire envelope (schema ``error.json``)."""
        body: dict[str, Any] = {
            "error": self.code,
            "message": self.message,
            "details": self.details,
        }
        for field in RECOVERY_FIELDS:
            if field in self.recovery:
                body[field] = self.recovery[field]
        return body

    @property
    def exit_code(self) -> int:
        """The ``ce`` exit status for this code."""
        return EXIT_CODES[self.code]


class Unauthorized(CommonroomError):
    """Missing or unknown bearer (401)."""

    code = "unauthorized"


class PermissionDenied(CommonroomError):
    """The session lacks a capability (403)."""

    code = "permission_denied"


class InvitationExpired(CommonroomError):
    """The invitation's expires_at passed (403)."""

    code = "invitation_expired"


class InvitationRevoked(CommonroomError):
    """The invitation was revoked (403)."""

    code = "invitation_revoked"


class InvitationRedeemed(CommonroomError):
    """The invitation was used already (403)."""

    code = "invitation_redeemed"


class UnsupportedVersion(CommonroomError):
    """A protocol version other than 1 (400)."""

    code = "unsupported_version"


class SessionExpired(CommonroomError):
    """The session's TTL passed (401)."""

    code = "session_expired"


class LeaseConflict(CommonroomError):
    """Another session leases the region (409)."""

    code = "lease_conflict"


class StaleVersion(CommonroomError):
    """The base or expected version is not the head (409)."""

    code = "stale_version"


class ProposalNotFound(CommonroomError):
    """No such proposal (404)."""

    code = "proposal_not_found"


class ProposalConflict(CommonroomError):
    """The region changed irreconcilably (409)."""

    code = "proposal_conflict"


class InvalidRegion(CommonroomError):
    """A region that does not resolve, or twice (400)."""

    code = "invalid_region"


class VersionNotFound(CommonroomError):
    """No such version (404)."""

    code = "version_not_found"


class TransportUnavailable(CommonroomError):
    """The transport cannot be dialled (503)."""

    code = "transport_unavailable"


class LimitExceeded(CommonroomError):
    """Rate limit (429) or oversized body (413)."""

    code = "limit_exceeded"


class InvalidRequest(CommonroomError):
    """Malformed input (400)."""

    code = "invalid_request"


class NotFound(CommonroomError):
    """An unknown route or record (404)."""

    code = "not_found"


class MethodNotAllowed(CommonroomError):
    """A route that exists, asked with a method it does not serve (405; ``Allow`` says which)."""

    code = "method_not_allowed"


class HandoffNotFound(CommonroomError):
    """No such handoff, or a task this session may not see (404)."""

    code = "handoff_not_found"


class HandoffConflict(CommonroomError):
    """A transition the handoff's or task's state does not allow (409; ``details.status``)."""

    code = "handoff_conflict"


class IdempotencyMismatch(CommonroomError):
    """The same idempotency_key from the same participant with a different request (409)."""

    code = "idempotency_mismatch"

class MessageNotFound(CommonroomError):
    """No such message on that board (404); also a message of another board: nothing is revealed."""

    code = "message_not_found"


class PeerNotFound(CommonroomError):
    """No such peer of the caller's participant (404)."""

    code = "peer_not_found"


class AssignmentStale(CommonroomError):
    """The expected assignment fence is not the todo's current state (409).

    ``details``: ``state_changed`` (always false: nothing was written),
    ``assignment`` (the current snapshot) and ``fresh_assignment_fence``
    (null when the current state cannot be completed).
    """

    code = "assignment_stale"


class AssignmentHistoryLost(CommonroomError):
    """Retention pruned a direct reply of the todo: the snapshot is incomplete (409)."""

    code = "assignment_history_lost"


class AssignmentTooLarge(CommonroomError):
    """The todo and its direct replies exceed the snapshot bound (409)."""

    code = "assignment_too_large"


class CompletionMismatch(CommonroomError):
    """The completion key was used for this todo with different content (409; fail closed)."""

    code = "completion_mismatch"


class CompletionPersistenceUncertain(CommonroomError):
    """Whether the completion was made durable is unknown (503): retry the exact same request."""

    code = "completion_persistence_uncertain"


class StorageUnavailable(CommonroomError):
    """The sidecar could not take the write (503): nothing of it was committed.

    ``details.reason``: ``disk_full``, ``read_only``, ``io_error`` or
    ``sidecar_replaced`` (the sidecar or its ``-wal`` was deleted or
    replaced under the running room: it rescues what it holds and restarts
    its worker on it); ``file_behind`` (the document's file could not take
    the last version yet: no new version until it has); ``vacuum_failed``
    from ``ce sidecar compact`` (committed repack, no ``VACUUM``).
    """

    code = "storage_unavailable"


def body_too_large(limit: int) -> LimitExceeded:
    """The 413 ``limit_exceeded`` for a request body over ``limit`` bytes (HTTP, ``/mcp``, ``ce mcp``)."""
    return LimitExceeded(f"request body is larger than {limit} bytes", details={"limit_bytes": limit}, status=413)


#: code → class, for clients that rebuild errors from the wire.
BY_CODE: dict[str, type[CommonroomError]] = {
    cls.code: cls
    for cls in (
        Unauthorized,
        PermissionDenied,
        InvitationExpired,
        InvitationRevoked,
        InvitationRedeemed,
        UnsupportedVersion,
        SessionExpired,
        LeaseConflict,
        StaleVersion,
        ProposalNotFound,
        MethodNotAllowed,
        ProposalConflict,
        InvalidRegion,
        VersionNotFound,
        TransportUnavailable,
        LimitExceeded,
        InvalidRequest,
        NotFound,
        HandoffNotFound,
        HandoffConflict,
        IdempotencyMismatch,
        MessageNotFound,
        PeerNotFound,
        AssignmentStale,
        AssignmentHistoryLost,
        AssignmentTooLarge,
        CompletionMismatch,
        CompletionPersistenceUncertain,
        StorageUnavailable,
    )
}


def from_dict(body: dict[str, Any]) -> CommonroomError:
    """Rebuild an error from its wire envelope (unknown codes → InvalidRequest)."""
    cls = BY_CODE.get(body.get("error", ""), InvalidRequest)
    recovery = {k: body[k] for k in RECOVERY_FIELDS if k in body}
    return cls(body.get("message", ""), details=body.get("details") or {}, **recovery)
