"""The engine: every operation of the room, called by HTTP, MCP and ``ce`` alike.

``Engine`` is composed of one mixin per concern (access, reading, versions,
leases, proposals, …), each in its own module. Build it with
:meth:`Engine.open`.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any, Callable

from .. import tokens
from ..clock import Clock
from ..errors import InvalidRequest
from ..store import Store, WriteContext, sidecar_path
from ..store.models import Version
from .access import AccessMixin
from .base import CAPABILITIES, OPERATOR, Actor, content_hash, require
from .filesync import file_state, write_atomic
from .history import HistoryMixin
from .leases import LeasesMixin
from .proposals import ProposalsMixin
from .reading import ReadingMixin
from .versions import VersionsMixin

__all__ = ["CAPABILITIES", "OPERATOR", "Actor", "Engine", "content_hash", "require"]

log = logging.getLogger("commonroom.engine")


class Engine(AccessMixin, ReadingMixin, VersionsMixin, LeasesMixin, ProposalsMixin, HistoryMixin):
    """One room's engine over its document and sidecar."""

    _file_stat: Any = None

    @classmethod
    def open(
        cls,
        document: Path,
        *,
        clock: Clock | None = None,
        publish: Callable[[list[dict[str, Any]]], None] | None = None,
        readonly: bool = False,
    ) -> "Engine":
        """Open (creating if needed) the sidecar of ``document``.

        On first open the file's bytes (UTF-8) become version 1 and a
        workspace id is minted. Otherwise the file is reconciled with the
        head (:meth:`reconcile_file`). ``readonly`` opens an existing sidecar
        for reads only (``InvalidRequest`` if there is none). Raises
        ``UnicodeDecodeError`` / ``OSError`` for an unreadable document.
        """
        document = Path(document).resolve()
        clock = clock or Clock()
        sidecar = sidecar_path(document)
        if readonly and not sidecar.exists():
            raise InvalidRequest(f"{document.name} has no room yet (no {sidecar.name})",
                                 details={"file": str(document)})
        store = Store(sidecar, clock, publish, migrate=not readonly)
        engine = cls(document_path=document, store=store, clock=clock)
        if readonly:
            engine.workspace_id = store.meta("workspace_id") or ""
            return engine
        engine._bootstrap()
        return engine

    def _bootstrap(self) -> None:
        workspace_id = self.store.meta("workspace_id")
        if workspace_id and Version.select().exists():
            self.workspace_id = workspace_id
            self.reconcile_file()
            return
        text = self.document_path.read_bytes().decode("utf-8")

        def init(ctx: WriteContext) -> str:
            wid = self.store.meta("workspace_id") or tokens.new_id("w_")
            self.store.set_meta("workspace_id", wid)
            if not Version.select().exists():
                Version.create(number=1, content=text, content_hash=content_hash(text),
                               created_at=self.clock.stamp(), summary="initial document", source="initial")
                ctx.emit("version.committed", {"version": 1, "summary": "initial document", "source": "initial",
                                                "content_hash": content_hash(text), "proposal_id": None,
                                                "author": None, "lines": [1, text.count("\n") + 1]})
            return wid

        self.workspace_id = self.store.write(init)
        self._file_stat = file_state(self.document_path)

    def reconcile_file(self) -> str:
        """Make the file and the head agree after a start; returns what it did.

        - ``"clean"``: the file is the head.
        - ``"repaired"``: the file is version head-1 (a crash between the
          commit and the rename): the head is written back.
        - ``"missing"``: the file is gone: the head is written back.
        - ``"external"``: anything else is an edit made outside the room: it
          becomes a new version by the local operator (``source:
          external``) with a ``document.external_edit`` event. Never lost,
          never overwritten.
        """
        head = self.head()
        try:
            text = self.document_path.read_bytes().decode("utf-8")
        except FileNotFoundError:
            self._file_stat = write_atomic(self.document_path, head.text)
            log.warning("%s was missing; restored version %d", self.document_path, head.number)
            return "missing"
        if text == head.text:
            self._file_stat = file_state(self.document_path)
            return "clean"
        if head.number > 1 and text == self.version_text(head.number - 1):
            self._file_stat = write_atomic(self.document_path, head.text)
            log.warning("%s was at version %d; repaired to the head %d", self.document_path,
                        head.number - 1, head.number)
            return "repaired"
        self.store.write(lambda ctx: self._record_external(ctx, text))
        return "external"

    def _record_external(self, ctx: WriteContext, text: str) -> None:
        row = self._commit(ctx, text, actor=OPERATOR, summary="edit made outside the room", source="external")
        ctx.emit("document.external_edit", {"version": row.number, "content_hash": row.content_hash})

    def sync_external(self) -> None:
        """Record an outside edit made since the last commit, if any (own transaction).

        Cheap when nothing changed (one ``stat``). Called before every
        operation that commits, so a proposal or write never overwrites an
        outside edit: the edit becomes the head first and the operation
        rebases onto it or sees ``stale_version``.
        """
        if self._file_stat is not None and file_state(self.document_path) == self._file_stat:
            return
        try:
            text = self.document_path.read_bytes().decode("utf-8")
        except (FileNotFoundError, UnicodeDecodeError):
            return
        if text != self.head().text:
            self.store.write(lambda ctx: self._record_external(ctx, text))
        else:
            self._file_stat = file_state(self.document_path)

    def close(self) -> None:
        """Close the sidecar."""
        self.store.close()
