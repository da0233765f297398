"""Proposals with three-way rebase (DESIGN.md, *Proposals*); direct writes are :mod:`commonroom.engine.writes`.

A proposal replaces a region as seen at ``base_version``. When the head has
moved on, creation tries a three-way merge (``commonroom.merge``, on the
maintained ``merge3`` library): a clean merge is stored rebased onto the
head (``rebased_from`` keeps the asked base); a conflict is
``stale_version`` with ``base_version``, ``current_version``, ``diff``
(base→head, the hunks that touch the region) and ``changes`` (the versions
in between). Approval (``approve``) merges again against the head of that
moment: a conflict is ``proposal_conflict`` with ``proposal_id`` and the
hunks; a change touching a region another session leases is
``lease_conflict``; otherwise it commits version N+1.
"""

from __future__ import annotations

import re
from typing import Any, cast

from commonroom.generated.types.editing import ApproveResult, ProposalReview, ProposalsPage, ProposalStatus
from commonroom.generated.types.editing import Proposal as ProposalWire

from .. import conventions, regions, tokens
from ..errors import InvalidRequest, PermissionDenied, ProposalConflict, ProposalNotFound, StaleVersion
from ..merge import merge3_text, unified_diff
from ..store import WriteContext
from ..store.models import Proposal as ProposalRow
from ..store.rows import row_by_id
from ..vocabulary import PROPOSAL_STATUSES, words
from .base import OPERATOR, Actor, EngineBase, encode_cursor, page_after_stamp_and_id, parse_limit, require
from .versions import hunk

_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+\d+(?:,\d+)? @@")


def region_diff(base_text: str, head_text: str, span: regions.Span, base: int, head: int) -> str:
    """Unified diff base→head keeping the hunks that touch ``span`` (all if none do)."""
    full = unified_diff(base_text, head_text, f"v{base}", f"v{head}")
    lines = full.splitlines(keepends=True)
    if len(lines) < 3:
        return full
    header, body = lines[:2], lines[2:]
    hunks: list[list[str]] = []
    for line in body:
        if line.startswith("@@"):
            hunks.append([line])
        elif hunks:
            hunks[-1].append(line)
    keep = []
    for h in hunks:
        m = _HUNK.match(h[0])
        assert m is not None  # unified_diff writes every hunk header so
        start = int(m.group(1))
        count = int(m.group(2)) if m.group(2) is not None else 1
        end = start + count - 1
        lo, hi = (span.start, span.end) if not span.empty else (span.start - 1, span.start)
        if start <= hi and lo <= max(end, start):
            keep.append(h)
    chosen = keep or hunks
    return "".join(header + [line for h in chosen for line in h])


def _conflict_hunks(conflicts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: ("".join(v) if isinstance(v, list) else v) for k, v in c.items()} for c in conflicts]


class ProposalsMixin(EngineBase):
    """Create, list, get, approve, reject, withdraw proposals; direct writes."""

    def _proposal_dict(self, row: ProposalRow) -> ProposalWire:
        return {
            "id": row.id,
            "status": cast("ProposalStatus", row.status),  # the sidecar holds only these
            "author": (self.participant_name(row.participant_id) or "?") if row.participant_id else "operator",
            "session_id": row.session_id,
            "base_version": row.base_version,
            "region": row.region,
            "lines": [row.start_line, row.end_line],
            "text": row.text,
            "summary": row.summary,
            "created_at": row.created_at,
            "decided_at": row.decided_at,
            "decided_by": row.decided_by,
            "reason": row.reason,
            "committed_version": row.committed_version,
            "rebased_from": row.rebased_from,
        }

    def _get_proposal(self, proposal_id: str) -> ProposalRow:
        # by SQL text: peewee builds the SELECT of every column anew on each call (~0.25 ms, on every approval)
        row = row_by_id(self.store.models.Proposal, proposal_id)
        if row is None:
            raise ProposalNotFound(f"no proposal {proposal_id}", details={}, proposal_id=proposal_id)
        return row

    def _stale(self, base: int, base_text: str, span: regions.Span, conflicts: list, **extra: Any) -> StaleVersion:
        head = self.head()
        return StaleVersion(
            f"version {base} is no longer the head (now {head.number}) and the change does not rebase cleanly",
            details={"conflicts": _conflict_hunks(conflicts), **extra},
            base_version=base,
            current_version=head.number,
            diff=region_diff(base_text, head.text, span, base, head.number),
            changes=self._changes(base, head.number),
        )

    def _rebase(self, base_text: str, span: regions.Span,
                text: str) -> tuple[list[str] | None, list[dict[str, Any]]]:
        """``text`` for ``span`` of ``base_text``, merged three ways onto the head.

        The change is made in the base's conventions, then merged comparing
        normalized lines (a change of line endings alone is no change); the
        lines it brings take the head's newline style and the result keeps
        the head's final newline and BOM. ``(lines, [])`` when clean, else
        ``(None, conflicts)``.
        """
        ours, _ = conventions.splice(regions.lines_of(base_text), span, text, conventions.conventions_of(base_text))
        conv = self.head_conventions()
        merged = merge3_text(base_text, "".join(ours), self.head().text, normalize=True,
                             newline=conv.newline if conv.settled else None)
        if merged.text is None:
            return None, merged.conflicts
        return conventions.conform_edges(regions.lines_of(merged.text), conv), []

    def create_proposal(self, actor: Actor, base_version: int, region: Any, text: str,
                        summary: str = "") -> ProposalWire:
        """Propose ``text`` for ``region`` at ``base_version`` (``Proposal``).

        Needs ``propose``. Raises ``VersionNotFound``, ``InvalidRegion``, or
        ``StaleVersion`` when the head moved and the change does not rebase.
        """
        Proposal = self.store.models.Proposal
        require(actor, "propose")
        self.sync_external()
        base_text = self.version_text(base_version)
        at_head = base_version == self.head().number
        span = regions.resolve(base_text, region, line_count=len(self.head_lines()) if at_head else None)

        def create(ctx: WriteContext) -> ProposalWire:
            head = self.head()
            stored_base, start, end, replacement, rebased_from = base_version, span.start, span.end, text, None
            if head.number != base_version:
                merged_lines, conflicts = self._rebase(base_text, span, text)
                if merged_lines is None:  # not clean
                    raise self._stale(base_version, base_text, span, conflicts)
                h = hunk(self.head_lines(), merged_lines)
                stored_base, rebased_from = head.number, base_version
                start, end, replacement = h["start"], h["end"], "".join(h["lines"])
            values = dict(
                id=tokens.new_id("pr_"),
                status="open",
                participant_id=actor.participant_id,
                session_id=actor.session_id,
                base_version=stored_base,
                region=span.region,  # normalized: the whole document is {"document": true}
                start_line=start,
                end_line=end,
                text=replacement,
                summary=summary or "",
                created_at=self.clock.stamp(),
                rebased_from=rebased_from,
            )
            self.store.insert(Proposal, **values)
            row = Proposal(**values)
            ctx.emit("proposal.created",
                     {"proposal_id": row.id, "base_version": stored_base, "summary": row.summary,
                      "region": row.region, "lines": [start, end], "rebased_from": rebased_from},
                     participant_id=actor.participant_id, session_id=actor.session_id)
            return self._proposal_dict(row)

        return self.store.write(create)

    def proposals(self, actor: Actor, status: str | None = None, limit: Any = None,
                  cursor: str | None = None) -> ProposalsPage:
        """Proposals oldest first, optionally by ``status`` (``ProposalsPage``). Needs ``read``."""
        Proposal = self.store.models.Proposal
        require(actor, "read")
        size = parse_limit(limit)
        if status not in (None, "") and status not in PROPOSAL_STATUSES:
            raise InvalidRequest(f"status must be {words(PROPOSAL_STATUSES)}, not {status!r}",
                                 details={"parameter": "status"})
        by_status = status not in (None, "")
        rows = page_after_stamp_and_id(Proposal, cursor, size, ('"status" = ?',) if by_status else (),
                                       (status,) if by_status else ())
        page = [self._proposal_dict(r) for r in rows[:size]]
        last = rows[size - 1] if len(rows) > size else None
        return {"proposals": page, "next_cursor": encode_cursor([last.created_at, last.id]) if last else None}

    def proposal(self, actor: Actor, proposal_id: str) -> ProposalWire:
        """One proposal. Needs ``read``; ``ProposalNotFound``."""
        require(actor, "read")
        return self._proposal_dict(self._get_proposal(proposal_id))

    def proposal_review(self, actor: Actor, proposal_id: str) -> ProposalReview:
        """A proposal as a reviewer reads it before deciding (``ProposalReview``). Needs ``read``.

        ``diff``: the change against its base (base → base with the text);
        ``applies``: open and merging cleanly onto the head now, the same
        three-way merge approval makes (leases are not looked at); when the
        head moved since the base, ``head_diff`` is head → head with the
        change merged (what approving commits) or ``conflicts`` the
        overlapping hunks. Raises ``ProposalNotFound``.
        """
        require(actor, "read")
        row = self._get_proposal(proposal_id)
        head = self.head()
        base_text = self.version_text(row.base_version)
        span = regions.Span(row.start_line, row.end_line)
        ours, _ = conventions.splice(regions.lines_of(base_text), span, row.text, conventions.conventions_of(base_text))
        review: ProposalReview = {
            "proposal": self._proposal_dict(row), "head_version": head.number, "applies": False,
            "diff": unified_diff(base_text, "".join(ours), f"v{row.base_version}", row.id),
            "head_diff": None, "conflicts": [],
        }
        if row.status != "open":
            return review
        if row.base_version == head.number:
            review["applies"] = True
            return review
        merged, conflicts = self._rebase(base_text, span, row.text)
        if merged is None:
            review["conflicts"] = cast("Any", _conflict_hunks(conflicts))
        else:
            review["applies"] = True
            review["head_diff"] = unified_diff(head.text, "".join(merged), f"v{head.number}", row.id)
        return review

    def _require_open(self, row: ProposalRow) -> None:
        """``ProposalConflict`` (409, ``proposal_id``, ``details.status``) unless the proposal is still open.

        A transition the record's state does not allow is the record's own
        conflict, never ``invalid_request`` (docs/protocol.md, *Errors*).
        """
        if row.status != "open":
            raise ProposalConflict(f"proposal {row.id} is {row.status} already, so it can no longer be decided",
                                   details={"status": row.status, "reason": "not_open", "allowed_from": ["open"]},
                                   proposal_id=row.id)

    def approve_proposal(self, actor: Actor, proposal_id: str) -> ApproveResult:
        """Commit an open proposal as version N+1 (``ApproveResult``).

        Needs ``approve``. Raises ``ProposalNotFound``, ``ProposalConflict``
        (not open: ``details.status``; or irreconcilable since it was made,
        with the hunks), ``LeaseConflict`` (another session leases the
        changed lines; the author's and the approver's own leases do not
        count).
        """
        models = self.store.models
        Version, Proposal = models.Version, models.Proposal
        require(actor, "approve")
        self.sync_external()

        def approve(ctx: WriteContext) -> ApproveResult:
            row = self._get_proposal(proposal_id)
            self._require_open(row)
            self._sweep_expired(ctx)
            head = self.head()
            delta = None
            if row.base_version == head.number:
                new_lines, delta = conventions.splice(self.head_lines(), regions.Span(row.start_line, row.end_line),
                                                  row.text, self.head_conventions())
                new_text = "".join(new_lines)
            else:
                base_text = self.version_text(row.base_version)
                merged_lines, conflicts = self._rebase(base_text, regions.Span(row.start_line, row.end_line),
                                                       row.text)
                if merged_lines is None:  # not clean
                    raise ProposalConflict(
                        f"proposal {row.id} is still open but no longer applies: the lines it changes were changed "
                        f"since v{row.base_version} (the head is v{head.number}); reject it, or propose the change "
                        f"again on v{head.number}",
                        details={"hunks": _conflict_hunks(conflicts), "base_version": row.base_version},
                        proposal_id=row.id, base_version=row.base_version, current_version=head.number,
                    )
                new_lines = merged_lines
                new_text = "".join(new_lines)
            h = delta or hunk(self.head_lines(), new_lines)
            changed = regions.Span(h["start"], h["end"])
            self._check_leases({actor.session_id, row.session_id} - {None}, changed, head.text)
            author = self._author_of(row)
            version_row = None
            if new_text != head.text:
                version_row = self._commit(ctx, new_text, actor=author, summary=row.summary or f"proposal {row.id}",
                                           source="proposal", proposal_id=row.id, new_lines=new_lines,
                                           delta=h)
            row.status = "approved"
            row.decided_at = self.clock.stamp()
            row.decided_by = actor.name
            row.committed_version = version_row.number if version_row else head.number
            self.store.update(Proposal, row.id, status=row.status, decided_at=row.decided_at,
                              decided_by=row.decided_by, committed_version=row.committed_version)
            ctx.emit("proposal.approved",
                     {"proposal_id": row.id, "version": row.committed_version, "approved_by": actor.name},
                     participant_id=actor.participant_id, session_id=actor.session_id)
            info = self._version_info(version_row or Version.get_by_id(head.number))
            return {"proposal": self._proposal_dict(row), "version": info}

        return self.store.write(approve)

    def _author_of(self, row: ProposalRow) -> Actor:
        if row.participant_id is None:
            return OPERATOR
        return Actor(kind="session", capabilities=frozenset(), session_id=row.session_id,
                     participant_id=row.participant_id, participant_name=self.participant_name(row.participant_id))

    def reject_proposal(self, actor: Actor, proposal_id: str, reason: str | None = None) -> ProposalWire:
        """Reject an open proposal. Needs ``approve``; ``ProposalConflict`` when it is no longer open."""
        require(actor, "approve")
        return self._decide(actor, proposal_id, "rejected", reason)

    def withdraw_proposal(self, actor: Actor, proposal_id: str) -> ProposalWire:
        """Withdraw an open proposal: its author (any of their sessions) or the operator.

        ``PermissionDenied`` for anyone else; ``ProposalConflict`` when it is no longer open.
        """
        require(actor, "propose")
        return self._decide(actor, proposal_id, "withdrawn", None)

    def _decide(self, actor: Actor, proposal_id: str, status: str, reason: str | None) -> ProposalWire:
        def decide(ctx: WriteContext) -> ProposalWire:
            row = self._get_proposal(proposal_id)
            if status == "withdrawn" and actor.kind == "session" and row.participant_id != actor.participant_id:
                raise PermissionDenied("only the proposal's author can withdraw it",
                                       details={"required": "author"})
            self._require_open(row)
            row.status = status
            row.decided_at = self.clock.stamp()
            row.decided_by = actor.name
            row.reason = reason
            row.save()
            ctx.emit(f"proposal.{status}", {"proposal_id": row.id, "by": actor.name, "reason": reason},
                     participant_id=actor.participant_id, session_id=actor.session_id)
            return self._proposal_dict(row)

        return self.store.write(decide)
