"""Direct writes: ``document_write`` (``PUT /workspace/document``), a commit with an expected version.

The other way to a version besides approving a proposal
(:mod:`commonroom.engine.proposals`): a session holding ``write`` replaces
the document or a region when the head is the version it names (DESIGN.md,
*Versions*; seed protocol.txt, ``stale_version``). Both end in the one commit
path, :meth:`~commonroom.engine.versions.VersionsMixin._commit`.
"""

from __future__ import annotations

from typing import Any

from commonroom.generated.types.editing import VersionInfo

from .. import conventions, regions
from ..errors import InvalidRequest, StaleVersion
from ..merge import unified_diff
from ..store import WriteContext
from .base import Actor, EngineBase, require
from .versions import hunk


class WritesMixin(EngineBase):
    """``write``: a direct commit on the head the caller names."""

    def write(self, actor: Actor, expected_version: Any, text: str, region: Any = None,
              summary: str = "") -> VersionInfo:
        """Replace the document or a region, if the head is ``expected_version``.

        Needs ``write``. Returns the new ``VersionInfo`` (the head's when the
        text is unchanged: no version is made). Raises
        ``StaleVersion`` (``expected_version``, ``current_version``, ``diff``
        expected→head), ``InvalidRegion``, ``LeaseConflict``.
        """
        Version = self.store.models.Version
        require(actor, "write")
        if isinstance(expected_version, bool) or not isinstance(expected_version, int):
            raise InvalidRequest("expected_version must be an integer", details={"pointer": "/expected_version"})
        self.sync_external()

        def commit(ctx: WriteContext) -> VersionInfo:
            head = self.head()
            if expected_version != head.number:
                if not 1 <= expected_version <= head.number:
                    raise StaleVersion(f"version {expected_version} does not exist; the head is {head.number}",
                                       details={}, expected_version=expected_version,
                                       current_version=head.number, diff="")
                raise StaleVersion(
                    f"the head is version {head.number}, not {expected_version}",
                    details={},
                    expected_version=expected_version,
                    current_version=head.number,
                    diff=unified_diff(self.version_text(expected_version), head.text,
                                      f"v{expected_version}", f"v{head.number}"),
                    changes=self._changes(expected_version, head.number),
                )
            span = regions.resolve(head.text, region, line_count=len(self.head_lines()))
            new_lines, h = conventions.splice(self.head_lines(), span, text, self.head_conventions())
            new_text = "".join(new_lines)
            h = h or hunk(self.head_lines(), new_lines)
            self._sweep_expired(ctx)
            if new_text == head.text:
                # nothing changes: no version (as for an approval that changes nothing)
                return self._version_info(Version.get_by_id(head.number))
            self._check_leases({actor.session_id} - {None}, regions.Span(h["start"], h["end"]), head.text)
            row = self._commit(ctx, new_text, actor=actor, summary=summary or "direct write", source="write",
                               new_lines=new_lines, delta=h)
            return self._version_info(row)

        return self.store.write(commit)
