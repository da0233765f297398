"""Every operation of the room, declared once (see :mod:`commonroom.operations.spec`).

Adding an operation is one entry here (plus its engine method and, if
new, its schemas in ``schema/``): the HTTP route, the MCP tool, both
OpenAPI documents, the docs tables and the parity tests follow from it
(``python -m codegen``), and a ``ce`` command calls it by name
(:func:`commonroom.cli.sessions.session_call`, its route stored by codegen
in ``commonroom/cli/routes.json``). Capabilities, message kinds and the
lease TTL bounds come from ``schema/`` (:mod:`commonroom.vocabulary`).
"""

from __future__ import annotations

from ..engine.board_summaries import SUMMARY_BYTES
from ..vocabulary import HANDOFF_STATUSES, LEASE_TTL_DEFAULT, LEASE_TTL_MAX, MESSAGE_KINDS, PROPOSAL_STATUSES, words
from .spec import BOTH, INGRESS, OWNER, Arg, Http, Mcp, Operation, Table

_PAGE = ("limit", "cursor")
#: A cursor this room did not issue is refused although it is a string.
_CURSOR = ("invalid_request",)
#: A transition the record's state does not allow is 409 with the record's own conflict code
#: (docs/protocol.md, *Errors*): a proposal no longer open, a lease no longer active.
_PROPOSAL_STATE = ("proposal_conflict",)
_LEASE_STATE = ("lease_conflict",)

OPERATIONS = Table([
    # -- the room ---------------------------------------------------------
    Operation(
        "join", "Redeem an invitation (single use) for a session", "join",
        "join#JoinRequest", "join#JoinResult", "session", args=("invitation", "client"), actor=False,
        errors=("invalid_request", "unauthorized", "invitation_expired", "invitation_revoked",
                "invitation_redeemed"),
        read_only=False, http=Http("POST", "/workspace/join", 201, (INGRESS,), public=True)),
    Operation(
        "session_get", "The calling session", "session_info", "common#NoArguments", "common#Session",
        "session", http=Http("GET", "/workspace/session", listeners=(INGRESS,))),
    Operation(
        "workspace_status", "Room status: workspace, file, head version, counts, last event id",
        "room_status", "common#NoArguments", "room#RoomStatus", "room", capability="read",
        http=Http("GET", "/workspace/room"),
        mcp=Mcp("Room status", "The room: workspace id, file name, head version, participant and live "
                "session counts. Needs read.")),
    Operation(
        "participants_list", "Participants, paged", "participants", "common#PageInput",
        "room#ParticipantsPage", "room", args=_PAGE, capability="read", errors=_CURSOR,
        http=Http("GET", "/workspace/participants"),
        mcp=Mcp("List participants", "People and agents in the room, in join order, with their live "
                "session counts. Needs read.")),
    Operation(
        "workspace_sessions", "Live sessions with their boards' latest retained activity, paged", "sessions",
        "common#PageInput", "owner#SessionsPage", "room", args=_PAGE, capability="read", errors=_CURSOR,
        http=Http("GET", "/workspace/sessions"),
        mcp=Mcp("List sessions", "The live sessions in the room, in join order: each session's id (its board's "
                "address, the session_id of post_session_message), participant, capabilities and expiry, and its "
                "board's retained messages (how many, how many open, the last change; not presence). Never a "
                "token. Needs read.")),
    Operation(
        "workspace_history", "Events still in the ring, paged", "history", "common#PageInput",
        "events#HistoryPage", "room", args=_PAGE, capability="read", errors=_CURSOR,
        http=Http("GET", "/workspace/history"),
        mcp=Mcp("Room history", "The room's recent events (commits, proposals, leases, joins), oldest "
                "first, page by page; history_lost says events after your cursor were already dropped "
                "from the ring. Needs read."),
        no_command="ce observe follows the same events, from an event id on (--since) or live"),
    Operation(
        "workspace_observe", "Server-sent events: replay after the cursor, then live", "observe",
        "events#ObserveInput", "events#Event", "live", capability="observe", errors=("invalid_request",),
        streams=True, http=Http("GET", "/workspace/observe", headers={"Last-Event-ID": "since_event_id"})),
    # -- the document and its versions -----------------------------------
    Operation(
        "document_read", "The head document, or one region of it", "document",
        "editing#DocumentReadInput", "room#Document", "document", args=("region",), capability="read",
        errors=("invalid_region",), http=Http("GET", "/workspace/document", cache="head"),
        mcp=Mcp("Read the document", "The head version of the markdown document, or one region of it (a "
                "heading path or a line range): text, version number and content hash. Use the version as "
                "base_version when you propose. Needs read.", cache="head")),
    Operation(
        "document_render", "The head document as CommonMark HTML (raw HTML off) and its headings", "rendered",
        "common#NoArguments", "room#RenderedDocument", "document", capability="read",
        http=Http("GET", "/workspace/document/rendered", cache="head"),
        no_command="the participant page's rendered view reads it; on a terminal ce read renders the document "
                   "itself, and ce call GET /workspace/document/rendered prints the HTML"),
    Operation(
        "document_outline", "The head's headings: lines, sections, paths and anchors", "outline",
        "common#NoArguments", "room#DocumentOutline", "document", capability="read",
        http=Http("GET", "/workspace/document/outline", cache="head"),
        no_command="the participant page's text view reads it (anchors, the sections to propose to); on a terminal "
                   "ce read --heading names a section, and ce call GET /workspace/document/outline prints it"),
    Operation(
        "document_write", "Replace the document or a region if the head is expected_version", "write",
        "editing#WriteRequest", "editing#VersionInfo", "document",
        args=("expected_version", "text", "region", Arg("summary", "")), capability="write",
        errors=("stale_version", "lease_conflict", "invalid_region"), read_only=False,
        http=Http("PUT", "/workspace/document"),
        mcp=Mcp("Write directly", "Replace the document or a region at once, committing a new version, if "
                "the head is still expected_version (else stale_version with the diff). Prefer proposals "
                "when others review. Needs write.", destructive=True)),
    Operation(
        "versions_list", "Versions, newest first", "versions", "common#PageInput", "editing#VersionsPage",
        "document", args=_PAGE, capability="read", errors=_CURSOR, http=Http("GET", "/workspace/versions"),
        mcp=Mcp("List versions", "Committed versions, newest first: number, author, time, summary, "
                "source. Needs read.")),
    Operation(
        "version_get", "One version, with its text", "version", "editing#VersionGetInput",
        "editing#VersionInfo", "document", args=("number",), capability="read",
        errors=("version_not_found",), http=Http("GET", "/workspace/versions/{number}", cache="version",
                                                  encoder="version_encoded"),
        mcp=Mcp("Get a version", "One committed version with the whole document text as it was then. "
                "Needs read.")),
    Operation(
        "versions_diff", "Unified diff between two versions", "diff", "editing#VersionsDiffInput",
        "editing#Diff", "document", args=("from_version", "to_version"), capability="read",
        errors=("version_not_found",),
        http=Http("GET", "/workspace/diff", aliases={"from": "from_version", "to": "to_version"}),
        mcp=Mcp("Diff two versions", "Unified diff from from_version to to_version (default: the head). "
                "Needs read.")),
    # -- leases -----------------------------------------------------------
    Operation(
        "leases_list", "Live leases, paged (read or lease)", "leases", "common#PageInput", "editing#LeasesPage",
        "leases", args=_PAGE, capability="read", also=("lease",), errors=_CURSOR, http=Http("GET", "/workspace/leases"),
        mcp=Mcp("List leases", "The live leases in the room, oldest acquired first, page by page: who "
                "holds which region, until when. Needs read or lease.")),
    Operation(
        "lease_acquire", "Lease a region for a TTL", "acquire_lease", "editing#LeaseRequest",
        "editing#Lease", "leases", args=("region", "ttl_seconds"), capability="lease",
        errors=("lease_conflict", "invalid_region"), read_only=False,
        http=Http("POST", "/workspace/leases", 201),
        mcp=Mcp("Lease a region", f"Reserve a region for your session for ttl_seconds (default {LEASE_TTL_DEFAULT}, at "
                f"most {LEASE_TTL_MAX}) before a long edit; others' commits to it are refused while it lasts. A "
                "lease_conflict result names the other lease. Needs lease.")),
    Operation(
        "lease_renew", "Renew a lease of this session", "renew_lease", "editing#LeaseRenewInput",
        "editing#Lease", "leases", args=("lease_id", "ttl_seconds"), capability="lease",
        errors=("not_found", "invalid_request", *_LEASE_STATE), read_only=False,
        http=Http("POST", "/workspace/leases/{lease_id}/renew"),
        mcp=Mcp("Renew a lease", "Extend one of your live leases to now + ttl_seconds. Needs lease.",
                idempotent=True)),
    Operation(
        "lease_release", "Release a lease of this session", "release_lease", "editing#LeaseIdInput",
        "editing#Lease", "leases", args=("lease_id",), capability="lease", errors=("not_found", *_LEASE_STATE),
        read_only=False, http=Http("DELETE", "/workspace/leases/{lease_id}"),
        mcp=Mcp("Release a lease", "Release one of your live leases when you are done. Needs lease.")),
    # -- proposals --------------------------------------------------------
    Operation(
        "proposals_list", "Proposals, oldest first", "proposals", "editing#ProposalsListInput",
        "editing#ProposalsPage", "proposals", args=("status", "limit", "cursor"), capability="read", errors=_CURSOR,
        http=Http("GET", "/workspace/proposals"),
        mcp=Mcp("List proposals", "Proposals, oldest first, optionally only those with a status ("
                + ", ".join(PROPOSAL_STATUSES) + "). Needs read.")),
    Operation(
        "proposal_create", "Propose text for a region as seen at base_version", "create_proposal",
        "editing#ProposalRequest", "editing#Proposal", "proposals",
        args=("base_version", "region", "text", Arg("summary", "")), capability="propose",
        errors=("stale_version", "version_not_found", "invalid_region"), read_only=False,
        http=Http("POST", "/workspace/proposals", 201),
        mcp=Mcp("Propose a change", "Propose replacement text for a region as you read it at base_version. "
                "If the document moved on, the server rebases cleanly or answers stale_version with the "
                "diff and the changes since: read again, redo the edit and propose again. Needs propose.")),
    Operation(
        "proposal_get", "One proposal", "proposal", "editing#ProposalIdInput", "editing#Proposal",
        "proposals", args=("proposal_id",), capability="read", errors=("proposal_not_found",),
        http=Http("GET", "/workspace/proposals/{proposal_id}"),
        mcp=Mcp("Get a proposal", "One proposal with its text, region, base version and status. Needs "
                "read."),
        no_command="ce proposals lists them with their status; one proposal whole is ce call GET "
                   "/workspace/proposals/ID"),
    Operation(
        "proposal_review", "One proposal for review: its diff, and whether it still applies at the head",
        "proposal_review", "editing#ProposalIdInput", "editing#ProposalReview", "proposals", args=("proposal_id",),
        capability="read", errors=("proposal_not_found",),
        http=Http("GET", "/workspace/proposals/{proposal_id}/review"),
        mcp=Mcp("Review a proposal", "Before approving: one proposal with the diff of its change against its "
                "base, whether it still applies at the head (applies), and when the head moved the diff "
                "against the head (head_diff) or the conflicting hunks. Needs read.")),
    Operation(
        "proposal_approve", "Approve: commit the next version", "approve_proposal",
        "editing#ProposalIdInput", "editing#ApproveResult", "proposals", args=("proposal_id",),
        capability="approve", errors=("proposal_not_found", "lease_conflict", *_PROPOSAL_STATE),
        read_only=False, http=Http("POST", "/workspace/proposals/{proposal_id}/approve"),
        mcp=Mcp("Approve a proposal", "Commit an open proposal as the next version. Needs approve.")),
    Operation(
        "proposal_reject", "Reject a proposal", "reject_proposal", "editing#ProposalRejectInput",
        "editing#Proposal", "proposals", args=("proposal_id", "reason"), capability="approve",
        errors=("proposal_not_found", *_PROPOSAL_STATE), read_only=False,
        http=Http("POST", "/workspace/proposals/{proposal_id}/reject"),
        mcp=Mcp("Reject a proposal", "Reject an open proposal, with an optional reason. Needs approve.")),
    Operation(
        "proposal_withdraw", "Withdraw your own proposal", "withdraw_proposal", "editing#ProposalIdInput",
        "editing#Proposal", "proposals", args=("proposal_id",), capability="propose",
        # permission_denied (details.required "author"): a propose holder withdrawing another's proposal
        errors=("proposal_not_found", "permission_denied", *_PROPOSAL_STATE), read_only=False,
        http=Http("POST", "/workspace/proposals/{proposal_id}/withdraw"),
        mcp=Mcp("Withdraw a proposal", "Withdraw your own open proposal. Needs propose.")),
    # -- handoffs and tasks ---------------------------------------------------
    Operation(
        "handoff_list", "Handoffs, oldest first", "handoffs", "handoffs#HandoffsListInput",
        "handoffs#HandoffsPage", "handoffs", args=("status", "limit", "cursor"), capability="read",
        errors=_CURSOR, http=Http("GET", "/workspace/handoffs"),
        mcp=Mcp("List handoffs", "Handoffs (work one participant asked another to do), oldest first, "
                "optionally only those with a status (" + ", ".join(HANDOFF_STATUSES) + "). Needs read.")),
    Operation(
        "handoff_create", "Hand work to another participant: a handoff and its task", "create_handoff",
        "handoffs#HandoffCreateInput", "handoffs#HandoffAndTask", "handoffs",
        args=("summary", "constraints", "artifacts", "assignee", "idempotency_key"), capability="handoff",
        errors=("invalid_request", "idempotency_mismatch", "limit_exceeded"), read_only=False,
        http=Http("POST", "/workspace/handoffs", 201),
        mcp=Mcp("Create a handoff", "Ask another participant (or anyone with handoff) to do a piece of work: "
                "a summary (at most 2,000 characters), constraints (8,000), artifact references (stored, "
                "never fetched) and optionally the assignee's name. Returns the handoff and its task "
                "(working). Pass an idempotency_key so a retry returns the same handoff. Needs handoff.")),
    Operation(
        "handoff_get", "One handoff", "handoff", "handoffs#HandoffIdInput", "handoffs#Handoff", "handoffs",
        args=("handoff_id",), capability="read", errors=("handoff_not_found",),
        http=Http("GET", "/workspace/handoffs/{handoff_id}"),
        mcp=Mcp("Get a handoff", "One handoff: status, summary, constraints, artifacts, owner, assignee, "
                "task id and, once completed, the result. Needs read.")),
    Operation(
        "handoff_events", "A handoff's own events, oldest first", "handoff_events",
        "handoffs#HandoffEventsInput", "handoffs#HandoffEventsPage", "handoffs",
        args=("handoff_id", "limit", "cursor"), capability="read", errors=("invalid_request", "handoff_not_found", *_CURSOR),
        http=Http("GET", "/workspace/handoffs/{handoff_id}/events"),
        mcp=Mcp("Handoff events", "Everything that happened to one handoff, oldest first, page by page; kept "
                "for the handoff's lifetime (read it after a gap). Needs read.")),
    Operation(
        "handoff_accept", "Accept an open handoff", "accept_handoff", "handoffs#HandoffIdInput",
        "handoffs#HandoffAndTask", "handoffs", args=("handoff_id",), capability="handoff",
        errors=("handoff_not_found", "handoff_conflict"), read_only=False,
        http=Http("POST", "/workspace/handoffs/{handoff_id}/accept"),
        mcp=Mcp("Accept a handoff", "Take on an open handoff: you become its assignee; its task stays "
                "working. Needs handoff.")),
    Operation(
        "handoff_request_input", "Ask the handoff's owner for input (the assignee)", "request_handoff_input",
        "handoffs#HandoffRequestInputInput", "handoffs#HandoffAndTask", "handoffs",
        args=("handoff_id", "message", "requested_schema"),
        errors=("invalid_request", "handoff_not_found", "handoff_conflict", "permission_denied"), read_only=False,
        http=Http("POST", "/workspace/handoffs/{handoff_id}/request-input"),
        mcp=Mcp("Request input", "As the assignee, ask the handoff's owner a question: the task becomes "
                "input_required until the owner answers (tasks/update). The assignee only.")),
    Operation(
        "handoff_complete", "Complete an accepted handoff with its result (the assignee)", "complete_handoff",
        "handoffs#HandoffCompleteInput", "handoffs#HandoffAndTask", "handoffs", args=("handoff_id", "result"),
        errors=("invalid_request", "handoff_not_found", "handoff_conflict", "permission_denied", "limit_exceeded"),
        read_only=False, http=Http("POST", "/workspace/handoffs/{handoff_id}/complete"),
        mcp=Mcp("Complete a handoff", "As the assignee, deliver the result text (at most 256 KiB): the task "
                "completes and the handoff waits for approval. A second completion does not replace the "
                "result. The assignee only.")),
    Operation(
        "handoff_approve", "Approve a handoff's result", "approve_handoff", "handoffs#HandoffIdInput",
        "handoffs#Handoff", "handoffs", args=("handoff_id",), capability="approve",
        errors=("handoff_not_found", "handoff_conflict"), read_only=False,
        http=Http("POST", "/workspace/handoffs/{handoff_id}/approve"),
        mcp=Mcp("Approve a handoff", "Accept the result of a handoff in result_ready. Needs approve.")),
    Operation(
        "handoff_reject", "Reject a handoff's result", "reject_handoff", "handoffs#HandoffDecisionInput",
        "handoffs#Handoff", "handoffs", args=("handoff_id", "reason"), capability="approve",
        errors=("handoff_not_found", "handoff_conflict"), read_only=False,
        http=Http("POST", "/workspace/handoffs/{handoff_id}/reject"),
        mcp=Mcp("Reject a handoff", "Refuse the result of a handoff in result_ready, with an optional "
                "reason. Needs approve.")),
    Operation(
        "handoff_cancel", "Cancel an open or accepted handoff (owner or approve)", "cancel_handoff",
        "handoffs#HandoffDecisionInput", "handoffs#Handoff", "handoffs", args=("handoff_id", "reason"),
        errors=("handoff_not_found", "handoff_conflict", "permission_denied"), read_only=False,
        http=Http("POST", "/workspace/handoffs/{handoff_id}/cancel"),
        mcp=Mcp("Cancel a handoff", "Withdraw a handoff that is open or accepted; its task is cancelled. "
                "Its owner, or a session with approve.", destructive=True)),
    Operation(
        "task_get", "A task by id (its owner, its assignee, or approve)", "task_get", "handoffs#TaskInput",
        "handoffs#Task", "handoffs", args=("task_id", "participant"), errors=("handoff_not_found",),
        http=Http("GET", "/workspace/task")),
    Operation(
        "task_update", "Answer a task's input requests (its owner, its assignee, or approve)", "task_update",
        "handoffs#TaskUpdateInput", "handoffs#Task", "handoffs", args=("task_id", "input_responses", "participant"),
        errors=("handoff_not_found", "invalid_request"), read_only=False,
        http=Http("POST", "/workspace/task/update")),
    Operation(
        "task_cancel", "Cancel a task (its owner or approve; a terminal one stays as it was)", "task_cancel", "handoffs#TaskInput",
        "handoffs#Task", "handoffs", args=("task_id", "participant"), errors=("handoff_not_found", "permission_denied"),
        read_only=False, http=Http("POST", "/workspace/task/cancel")),
    # -- boards (seed collaboration-board.txt) ------------------------------
    Operation(
        "post_session_message", "Post a message on a session's board", "post_session_message",
        "boards#PostMessageInput", "boards#Message", "boards",
        args=("session_id", "kind", "body", "priority", "tags", "reply_to", "requires_ack", "recording_session_id"),
        capability="message", errors=("invalid_request", "not_found", "message_not_found", "limit_exceeded"), read_only=False,
        http=Http("POST", "/workspace/boards/{session_id}/messages", 201),
        mcp=Mcp("Post a board message", f"Post a bounded message ({words(MESSAGE_KINDS)}) on the board of session session_id, optionally replying to "
                "one of its messages. A todo is an executable assignment: workers read it with "
                "get_session_assignment and finish it with complete_session_message. Body at most 16 KiB, at "
                "most 16 tags. Needs message.")),
    Operation(
        "list_session_messages", "A board's retained messages, oldest first, filtered (AND)",
        "list_session_messages", "boards#ListMessagesInput", "boards#MessagesPage", "boards",
        args=("session_id", "message_id", "reply_to", "kind", "status", "limit", "cursor"), capability="read",
        errors=("invalid_request", "not_found", *_CURSOR), http=Http("GET", "/workspace/boards/{session_id}/messages"),
        mcp=Mcp("List board messages", "Browse the retained messages of session session_id's board, oldest "
                "first, page by page. Exact filters, all applied together: message_id (a 0/1 lookup), "
                "reply_to (the replies of one todo), kind, status (open, resolved). Not the executable "
                "assignment: use get_session_assignment for that. Needs read.")),
    Operation(
        "get_session_assignment", "One snapshot of a todo, its direct replies and the assignment fence",
        "get_session_assignment", "boards#AssignmentInput", "boards#Assignment", "boards",
        args=("session_id", "message_id"), capability="read",
        errors=("invalid_request", "not_found", "message_not_found", "assignment_history_lost", "assignment_too_large"),
        http=Http("GET", "/workspace/boards/{session_id}/messages/{message_id}/assignment"),
        mcp=Mcp("Read an assignment", "Read the todo message_id on session session_id's board once before "
                "you work on it: the todo, every retained direct reply and the opaque assignment_fence over "
                "exactly that state. Pass the fence to complete_session_message. Needs read.")),
    Operation(
        "complete_session_message", "Complete a todo: one answer, resolved, fenced and idempotent",
        "complete_session_message", "boards#CompleteInput", "boards#Completion", "boards",
        args=("session_id", "message_id", "answer", "completion_key", "expected_assignment_fence", "priority",
              "tags", "recording_session_id"),
        capability="message",
        errors=("invalid_request", "not_found", "message_not_found", "assignment_stale", "assignment_history_lost",
                "assignment_too_large", "completion_mismatch", "completion_persistence_uncertain",
                "limit_exceeded"),
        read_only=False, http=Http("POST", "/workspace/boards/{session_id}/messages/{message_id}/complete"),
        mcp=Mcp("Complete a todo", "Finish the todo message_id on session session_id's board in one step: "
                "posts exactly one answer reply and resolves the todo, if expected_assignment_fence is still "
                "the assignment_fence of get_session_assignment (else assignment_stale with the fresh "
                "assignment; re-evaluate it). completion_key is your replay identity: on an uncertain outcome "
                "retry the exact same call; the same key with different content is completion_mismatch. "
                "Needs message.", idempotent=True)),
    Operation(
        "observe_session_messages", "A board's message-state changes after a token, with one bounded wait",
        "observe_session_messages", "boards#ObserveMessagesInput", "boards#Observation", "boards",
        args=("session_id", "after_observation_token", "wait_seconds", "limit"), capability="read",
        errors=("not_found", "invalid_request"), http=Http("GET", "/workspace/boards/{session_id}/observe"),
        mcp=Mcp("Observe a board", "Without after_observation_token: a baseline token, nothing replayed. "
                "With it: the retained messages of session session_id's board whose state changed since, "
                "with has_more paging; when nothing changed, waits up to wait_seconds (0-30) once "
                "(wait_outcome updated or timeout). history_lost: reload the board. Needs read.")),
    Operation(
        "session_discussion_summary", "A bounded summary of a session's board from its retained messages",
        "session_discussion_summary", "boards#SummaryInput", "boards#DiscussionSummary", "boards",
        args=("session_id",), capability="read", errors=("not_found",),
        http=Http("GET", "/workspace/boards/{session_id}/summary"),
        mcp=Mcp("Summarize a board", "What is on session session_id's board, from its retained messages only: "
                "counts by kind and status, the open todos (priority, age, requires_ack, ACKed), unanswered "
                "questions, the latest decisions, risks and answers, the last activity. Bounded: lists carry "
                "total and truncated, bodies body_truncated; history_lost means retention dropped older "
                "messages. Browsing, not the executable assignment (get_session_assignment). Needs read.",
                result_bytes=SUMMARY_BYTES)),
    Operation(
        "session_handoff_summary", "What a session did in the room, from stored facts, bounded",
        "session_handoff_summary", "boards#SummaryInput", "boards#HandoffSummary", "boards",
        args=("session_id",), capability="read", errors=("not_found",),
        http=Http("GET", "/workspace/sessions/{session_id}/summary"),
        mcp=Mcp("Summarize a session's work", "What session session_id did in the room, from the room's facts: "
                "versions it committed, its proposals (by status), leases it holds, handoffs it created or "
                "accepted, todos it completed and messages recorded under it (recording_session_id). Bounded "
                "and truncation-aware like the board summary; no liveness or presence. Background for a worker "
                "or a coordinator checking a result: re-read what it refers to before acting. Needs read.",
                result_bytes=SUMMARY_BYTES)),
    Operation(
        "post_peer_message", "Send a message to a peer (another live session of your participant)",
        "post_peer_message", "boards#PostPeerMessageInput", "boards#PeerMessage", "boards",
        args=("peer_id", "kind", "body", "priority", "tags", "requires_ack"), capability="message",
        errors=("invalid_request", "peer_not_found", "limit_exceeded"), read_only=False,
        http=Http("POST", "/workspace/peers/{peer_id}/messages", 201),
        mcp=Mcp("Message a peer", "Send a bounded message to peer_id, another live session of your own "
                "participant (ids come in the peer_awareness hint of tool results). It rides on the peer's next "
                "tool result (requires_ack=false), or on each until the peer ACKs it (true); kept 24 h. A "
                "conversation, not a task: no assignment or completion. Needs message.")),
    Operation(
        "list_session_peers", "Your peers with recent activity, and the peer messages kept for you",
        "list_session_peers", "common#NoArguments", "boards#PeersView", "boards", capability="read",
        http=Http("GET", "/workspace/peers", listeners=(INGRESS,))),
    # -- the operator (owner port) ----------------------------------------
    Operation(
        "invitation_create", "Make an invitation (owner token)", "invite", "owner#InviteRequest",
        "owner#InviteResult", "owner",
        args=("participant", "capabilities", Arg("transport", "loopback"),
              Arg("expires_in_seconds", keyword="expires_in_seconds"),
              Arg("session_ttl_seconds", keyword="session_ttl_seconds"), Arg("address", keyword="address")),
        actor=False, errors=("invalid_request", "transport_unavailable"), read_only=False,
        http=Http("POST", "/owner/invitations", 201, (OWNER,))),
    Operation(
        "sessions_list", "Live sessions with their boards' latest retained activity, paged (owner token)",
        "sessions", "common#PageInput", "owner#SessionsPage", "owner", args=_PAGE, capability="read",
        errors=_CURSOR, http=Http("GET", "/owner/sessions", listeners=(OWNER,))),
    Operation(
        "console_code", "A one-time console login code, single use, 60 s (owner token)", "console_code",
        "common#NoArguments", "owner#ConsoleCode", "owner", actor=False, read_only=False,
        http=Http("POST", "/owner/console/codes", 201, (OWNER,))),
    Operation(
        "sidecar_report", "The sidecar's size by part: versions, checkpoints, events, boards (owner token)",
        "sidecar_report", "common#NoArguments", "owner#SidecarReport", "owner", actor=False,
        http=Http("GET", "/owner/sidecar", listeners=(OWNER,))),
    Operation(
        "sidecar_compact", "Repack old checkpoints, then VACUUM the sidecar (owner token; the one writer)",
        "sidecar_compact", "common#NoArguments", "owner#SidecarCompaction", "owner", actor=False, read_only=False,
        http=Http("POST", "/owner/sidecar/compact", 200, (OWNER,))),
    Operation(
        "revoke", "Revoke an invitation or a session (owner token)", "revoke", "owner#RevokeRequest",
        "owner#RevokeResult", "owner",
        args=(Arg("invitation", keyword="invitation_ref"), Arg("session", keyword="session_id")),
        actor=False, errors=("not_found",), read_only=False, http=Http("POST", "/owner/revoke", 200, (OWNER,))),
])

__all__ = ["OPERATIONS", "BOTH", "INGRESS", "OWNER"]
