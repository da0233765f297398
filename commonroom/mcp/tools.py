"""commonroom's MCP tools: one engine call each, the same as the HTTP routes.

Each :class:`ToolSpec` names its input and output shapes in
``schema/mcp.json`` (bundled into self-contained schemas by
:mod:`commonroom.mcp.bundle`) and the single engine method it calls with
the caller's :class:`~commonroom.engine.Actor`. A refusal by the engine
(``CommonroomError``: permission_denied, stale_version, lease_conflict…)
becomes an ``isError: true`` result whose text is the HTTP error object
(:mod:`commonroom.mcp.dispatch`).

================== =============================== ==========
tool               engine method                   capability
================== =============================== ==========
workspace_status   room_status                     read
document_read      document                        read
participants_list  participants                    read
versions_list      versions                        read
version_get        version                         read
versions_diff      diff                            read
lease_acquire      acquire_lease                   lease
lease_renew        renew_lease                     lease
lease_release      release_lease                   lease
leases_list        leases                          read/lease
proposal_create    create_proposal                 propose
proposals_list     proposals                       read
proposal_get       proposal                        read
proposal_approve   approve_proposal                approve
proposal_reject    reject_proposal                 approve
proposal_withdraw  withdraw_proposal               propose
document_write     write                           write
workspace_history  history                         read
================== =============================== ==========
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from .bundle import bundle
from .registry import Context, Registry

Call = Callable[[Any, Any, dict[str, Any]], Any]


@dataclass(frozen=True)
class ToolSpec:
    """One tool: name, texts, schema names (``schema/mcp.json``) and its engine call."""

    name: str
    title: str
    description: str
    input: str
    output: str
    call: Call
    read_only: bool = True
    destructive: bool = False
    idempotent: bool = False
    cache_key: Callable[[Context, Any], Any] | None = None

    def annotations(self) -> dict[str, Any]:
        """MCP ``ToolAnnotations`` (hints only)."""
        out: dict[str, Any] = {"title": self.title, "readOnlyHint": self.read_only, "openWorldHint": False}
        if not self.read_only:
            out["destructiveHint"] = self.destructive
            out["idempotentHint"] = self.idempotent
        return out


TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec("workspace_status", "Room status",
             "The room: workspace id, file name, head version, participant and live session counts. Needs read.",
             "NoArguments", "WorkspaceStatusOutput", lambda e, a, x: e.room_status(a)),
    ToolSpec("document_read", "Read the document",
             "The head version of the markdown document, or one region of it (a heading path or a line "
             "range): text, version number and content hash. Use the version as base_version when you "
             "propose. Needs read.",
             "DocumentReadInput", "DocumentReadOutput", lambda e, a, x: e.document(a, x.get("region")),
             cache_key=lambda ctx, v: (v["version"], v["content_hash"], repr(ctx.arguments.get("region")))),
    ToolSpec("participants_list", "List participants",
             "People and agents in the room, in join order, with their live session counts. Needs read.",
             "PageInput", "ParticipantsListOutput", lambda e, a, x: e.participants(a, x.get("limit"), x.get("cursor"))),
    ToolSpec("versions_list", "List versions",
             "Committed versions, newest first: number, author, time, summary, source. Needs read.",
             "PageInput", "VersionsListOutput", lambda e, a, x: e.versions(a, x.get("limit"), x.get("cursor"))),
    ToolSpec("version_get", "Get a version",
             "One committed version with the whole document text as it was then. Needs read.",
             "VersionGetInput", "VersionGetOutput", lambda e, a, x: e.version(a, x["number"])),
    ToolSpec("versions_diff", "Diff two versions",
             "Unified diff from from_version to to_version (default: the head). Needs read.",
             "VersionsDiffInput", "VersionsDiffOutput",
             lambda e, a, x: e.diff(a, x["from_version"], x.get("to_version"))),
    ToolSpec("lease_acquire", "Lease a region",
             "Reserve a region for your session for ttl_seconds (default 300, at most 3600) before a long "
             "edit; others' commits to it are refused while it lasts. A lease_conflict result names the "
             "other lease. Needs lease.",
             "LeaseAcquireInput", "LeaseOutput",
             lambda e, a, x: e.acquire_lease(a, x.get("region"), x.get("ttl_seconds")), read_only=False),
    ToolSpec("lease_renew", "Renew a lease",
             "Extend one of your live leases to now + ttl_seconds. Needs lease.",
             "LeaseRenewInput", "LeaseOutput",
             lambda e, a, x: e.renew_lease(a, x["lease_id"], x.get("ttl_seconds")), read_only=False,
             idempotent=True),
    ToolSpec("lease_release", "Release a lease",
             "Release one of your live leases when you are done. Needs lease.",
             "LeaseIdInput", "LeaseOutput", lambda e, a, x: e.release_lease(a, x["lease_id"]), read_only=False),
    ToolSpec("leases_list", "List leases",
             "The live leases in the room: who holds which region, until when. Needs read or lease.",
             "NoArguments", "LeasesListOutput", lambda e, a, x: e.leases(a)),
    ToolSpec("proposal_create", "Propose a change",
             "Propose replacement text for a region as you read it at base_version. If the document moved "
             "on, the server rebases cleanly or answers stale_version with the diff and the changes since: "
             "read again, redo the edit and propose again. Needs propose.",
             "ProposalCreateInput", "ProposalOutput",
             lambda e, a, x: e.create_proposal(a, x["base_version"], x.get("region"), x["text"],
                                               x.get("summary", "")), read_only=False),
    ToolSpec("proposals_list", "List proposals",
             "Proposals, oldest first, optionally only those with a status (open, approved, rejected, "
             "withdrawn). Needs read.",
             "ProposalsListInput", "ProposalsListOutput",
             lambda e, a, x: e.proposals(a, x.get("status"), x.get("limit"), x.get("cursor"))),
    ToolSpec("proposal_get", "Get a proposal",
             "One proposal with its text, region, base version and status. Needs read.",
             "ProposalIdInput", "ProposalOutput", lambda e, a, x: e.proposal(a, x["proposal_id"])),
    ToolSpec("proposal_approve", "Approve a proposal",
             "Commit an open proposal as the next version. Needs approve.",
             "ProposalIdInput", "ProposalApproveOutput",
             lambda e, a, x: e.approve_proposal(a, x["proposal_id"]), read_only=False),
    ToolSpec("proposal_reject", "Reject a proposal",
             "Reject an open proposal, with an optional reason. Needs approve.",
             "ProposalRejectInput", "ProposalOutput",
             lambda e, a, x: e.reject_proposal(a, x["proposal_id"], x.get("reason")), read_only=False),
    ToolSpec("proposal_withdraw", "Withdraw a proposal",
             "Withdraw your own open proposal. Needs propose.",
             "ProposalIdInput", "ProposalOutput",
             lambda e, a, x: e.withdraw_proposal(a, x["proposal_id"]), read_only=False),
    ToolSpec("document_write", "Write directly",
             "Replace the document or a region at once, committing a new version, if the head is still "
             "expected_version (else stale_version with the diff). Prefer proposals when others review. "
             "Needs write.",
             "DocumentWriteInput", "DocumentWriteOutput",
             lambda e, a, x: e.write(a, x["expected_version"], x["text"], x.get("region"), x.get("summary", "")),
             read_only=False, destructive=True),
    ToolSpec("workspace_history", "Room history",
             "The room's recent events (commits, proposals, leases, joins), oldest first, page by page; "
             "history_lost says events after your cursor were already dropped from the ring. Needs read.",
             "PageInput", "WorkspaceHistoryOutput", lambda e, a, x: e.history(a, x.get("limit"), x.get("cursor"))),
)


def _handler(spec: ToolSpec) -> Callable[[Context], Any]:
    call = spec.call

    def handler(ctx: Context) -> Any:
        return call(ctx.engine, ctx.actor, ctx.arguments)

    handler.__name__ = spec.name
    return handler


def register_tools(registry: Registry) -> None:
    """Add every tool of :data:`TOOLS`."""
    for spec in TOOLS:
        registry.add_tool(spec.name, title=spec.title, description=spec.description,
                          input_schema=bundle("mcp#" + spec.input), output_schema=bundle("mcp#" + spec.output),
                          annotations=spec.annotations(), handler=_handler(spec), cache_key=spec.cache_key)
