"""Direct writes: ``document_write`` (``PUT /workspace/document``), a commit with an expected version.

The other way to a version besides approving a proposal
(:mod:`commonroom.engine.proposals`): a session holding ``write`` replaces
the document or a region as of the version it names (DESIGN.md,
*Versions*; seed protocol.txt, ``stale_version``): at the head it commits;
a region nobody has touched since is rebased onto the head as a proposal
is; otherwise ``stale_version``. Both end in the one commit path,
:meth:`~commonroom.engine.versions.VersionsMixin._commit`.
"""

from __future__ import annotations

from typing import Any

from commonroom.generated.types.editing import VersionInfo

from .. import conventions, regions
from ..errors import InvalidRequest, StaleVersion
from ..hunks import line_hunks
from ..store import WriteContext
from .base import Actor, EngineBase, require
from .proposals import region_diff
from .versions import hunk


class WritesMixin(EngineBase):
    """``write``: a direct commit on the head the caller names, or rebased onto it when its region is untouched."""

    def write(self, actor: Actor, expected_version: Any, text: str, region: Any = None,
              summary: str = "") -> VersionInfo:
        """Replace the document or a region as of ``expected_version``.

        Needs ``write``. At the head it commits. When the head has moved on,
        a region write whose region (resolved at ``expected_version``) no
        change since has touched is rebased onto the head and commits, as a
        proposal does (a three-way merge); a whole-document write, or a
        region that did change, is ``StaleVersion`` (``expected_version``,
        ``current_version``, ``diff`` expected→head: the hunks touching the
        region, ``changes``). Returns the new ``VersionInfo`` with
        ``committed: true`` and ``rebased_from`` (the expected version when
        rebased, else null); a write that changes nothing makes no version
        and answers the head's with ``committed: false``. Also raises
        ``InvalidRegion``, ``LeaseConflict``.
        """
        Version = self.store.models.Version
        require(actor, "write")
        if isinstance(expected_version, bool) or not isinstance(expected_version, int):
            raise InvalidRequest("expected_version must be an integer", details={"pointer": "/expected_version"})
        self.sync_external()

        def commit(ctx: WriteContext) -> VersionInfo:
            head = self.head()
            rebased_from = None
            if expected_version != head.number:
                new_lines, h = self._rebased_write(expected_version, text, region)
                rebased_from = expected_version
            else:
                span = regions.resolve(head.text, region, line_count=len(self.head_lines()))
                new_lines, h = conventions.splice(self.head_lines(), span, text, self.head_conventions())
            new_text = "".join(new_lines)
            h = h or hunk(self.head_lines(), new_lines)
            self._sweep_expired(ctx)
            if new_text == head.text:
                # nothing changes: no version (as for an approval that changes nothing)
                return {**self._version_info(Version.get_by_id(head.number)), "committed": False,
                        "rebased_from": rebased_from}
            self._check_leases({actor.session_id} - {None}, regions.Span(h["start"], h["end"]), head.text)
            row = self._commit(ctx, new_text, actor=actor, summary=summary or "direct write", source="write",
                               new_lines=new_lines, delta=h)
            return {**self._version_info(row), "committed": True, "rebased_from": rebased_from}

        return self.store.write(commit)

    def _rebased_write(self, expected: int, text: str, region: Any) -> tuple[list[str], dict[str, Any] | None]:
        """The head's lines with ``text`` written into ``region`` as of version ``expected`` (not the head).

        ``StaleVersion`` for a version that does not exist, a whole-document
        write, a region some change since ``expected`` touched (a real hunk
        overlapping it, :func:`commonroom.regions.overlaps`), or a merge that
        does not come out clean. Returns ``(lines, None)``.
        """
        head = self.head()
        if not 1 <= expected <= head.number:
            raise StaleVersion(f"version {expected} does not exist; the head is {head.number}",
                               details={}, expected_version=expected, current_version=head.number, diff="")
        base_text = self.version_text(expected)
        span = regions.resolve(base_text, region)
        touched: list[Any] = []
        if span.kind != "document":
            base_lines = regions.lines_of(base_text)
            around = hunk(base_lines, self.head_lines())
            touched = [h for h in line_hunks(base_lines[around["start"] - 1:around["end"]], around["lines"],
                                             around["start"] - 1)
                       if regions.overlaps(regions.Span(h[0], h[1]), span)]
        if span.kind == "document" or touched:
            raise self._stale_write(expected, base_text, span, "changed since" if touched else None)
        merged, conflicts = self._rebase(base_text, span, text)
        if merged is None:
            raise self._stale_write(expected, base_text, span, "does not merge", conflicts)
        return merged, None

    def _stale_write(self, expected: int, base_text: str, span: regions.Span, why: str | None,
                     conflicts: list[Any] | None = None) -> StaleVersion:
        head = self.head()
        where = "the document" if span.kind == "document" else f"lines {span.start}-{span.end} of v{expected}"
        message = (f"the head is version {head.number}, not {expected}" if why is None else
                   f"the head is version {head.number}, not {expected}, and {where} {why} it")
        return StaleVersion(
            message, details={"conflicts": conflicts} if conflicts else {},
            expected_version=expected, current_version=head.number,
            diff=region_diff(base_text, head.text, span, expected, head.number),
            changes=self._changes(expected, head.number),
        )
