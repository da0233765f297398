"""The engine: every operation of the room, called by HTTP, MCP and ``ce`` alike.

``Engine`` is composed of one mixin per concern (access, reading, …), each in
its own module. Build it with :meth:`Engine.open`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from .. import tokens
from ..clock import Clock
from ..store import Store, sidecar_path
from ..store.models import Version
from .access import AccessMixin
from .base import CAPABILITIES, OPERATOR, Actor, content_hash, require
from .reading import ReadingMixin

__all__ = ["CAPABILITIES", "OPERATOR", "Actor", "Engine", "content_hash", "require"]


class Engine(AccessMixin, ReadingMixin):
    """One room's engine over its document and sidecar."""

    @classmethod
    def open(
        cls,
        document: Path,
        *,
        clock: Clock | None = None,
        publish: Callable[[list[dict[str, Any]]], None] | None = None,
    ) -> "Engine":
        """Open (creating if needed) the sidecar of ``document``.

        On first open the file's bytes (UTF-8) become version 1 and a
        workspace id is minted. Raises ``UnicodeDecodeError`` / ``OSError``
        for an unreadable document (the CLI turns them into one-line errors).
        """
        document = Path(document).resolve()
        clock = clock or Clock()
        store = Store(sidecar_path(document), clock, publish)
        engine = cls(document_path=document, store=store, clock=clock)
        engine._bootstrap()
        return engine

    def _bootstrap(self) -> None:
        workspace_id = self.store.meta("workspace_id")
        has_version = Version.select().exists()
        if workspace_id and has_version:
            self.workspace_id = workspace_id
            return
        text = self.document_path.read_bytes().decode("utf-8")

        def init(ctx):
            wid = self.store.meta("workspace_id") or tokens.new_id("w_")
            self.store.set_meta("workspace_id", wid)
            if not Version.select().exists():
                Version.create(
                    number=1,
                    content=text,
                    content_hash=content_hash(text),
                    created_at=self.clock.stamp(),
                    summary="initial document",
                    source="initial",
                )
                ctx.emit("version.committed", {"version": 1, "summary": "initial document",
                                                "source": "initial", "content_hash": content_hash(text)})
            return wid

        self.workspace_id = self.store.write(init)

    def close(self) -> None:
        """Close the sidecar."""
        self.store.close()
