"""The engine: every operation of the room, called by HTTP, MCP and ``ce`` alike.

``Engine`` is composed of one mixin per concern (access, reading, versions,
leases, proposals, handoffs, …), each in its own module. Build it with
:meth:`Engine.open`.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any, Callable, Literal

from .. import regions, tokens
from ..hunks import line_hunks, new_ranges
from ..clock import Clock
from ..roomfiles import RoomFiles
from ..store import Store, WriteContext, sidecar_path
from .access import AccessMixin
from .boards import BoardsMixin
from .checkpoints import pack
from .console import ConsoleMixin
from .base import CAPABILITIES, OPERATOR, Actor, content_hash, require
from ..merge import merge3_text
from .filesync import FileChanged, FileFollower, FileStat, file_state, open_for_writing, write_atomic
from .tasks import TasksMixin
from .handoffs import HandoffsMixin
from .history import HistoryMixin
from .leases import LeasesMixin
from .peers import PeersMixin
from .piggyback import PiggybackMixin
from .proposals import ProposalsMixin
from .reading import ReadingMixin
from .retention import RetentionMixin
from .sidecar import SidecarMixin
from .versions import VersionsMixin, hunk
from .writes import WritesMixin

__all__ = ["CAPABILITIES", "OPERATOR", "Actor", "Engine", "content_hash", "require"]

log = logging.getLogger("commonroom.engine")

#: A change to the file outside the room is taken once it has stayed the same this long (seconds):
#: :meth:`Engine.watch_file`.
FILE_SETTLE_SECONDS = 0.15


class Engine(AccessMixin, ReadingMixin, VersionsMixin, LeasesMixin, ProposalsMixin, WritesMixin, HistoryMixin,
             HandoffsMixin, TasksMixin, BoardsMixin, RetentionMixin, PeersMixin, PiggybackMixin, ConsoleMixin,
             SidecarMixin):
    """One room's engine over its document and sidecar."""

    follower: FileFollower

    @classmethod
    def open(
        cls,
        document: Path,
        *,
        clock: Clock | None = None,
        publish: Callable[[list[dict[str, Any]]], None] | None = None,
        readonly: bool = False,
        upgrade: bool = True,
        background_file: bool = False,
    ) -> "Engine":
        """Open (creating if needed) the sidecar of ``document``.

        On first open the file's bytes (UTF-8) become version 1 and a
        workspace id is minted. Otherwise the file is reconciled with the
        head (:meth:`reconcile_file`). ``readonly`` opens an existing sidecar
        for reads only (``InvalidRequest`` if there is none), and never
        upgrades it: an older schema is ``InvalidRequest`` saying the room
        upgrades it; so does ``upgrade=False`` (a writer that is not the room:
        ``ce invite`` offline).
        ``background_file`` makes the file follow the head from a background
        thread (the room process); otherwise each commit writes it at once.
        Raises
        ``UnicodeDecodeError`` / ``OSError`` for an unreadable document.
        """
        document = Path(document).resolve()
        clock = clock or Clock()
        sidecar = RoomFiles(document).require_room() if readonly else sidecar_path(document)
        store = Store(sidecar, clock, publish, migrate=not readonly, upgrade=upgrade and not readonly)
        engine = cls(document_path=document, store=store, clock=clock)
        engine.follower = FileFollower(document, background=background_file and not readonly)
        if readonly:
            engine.workspace_id = store.meta("workspace_id") or ""
            return engine
        engine._bootstrap()
        return engine

    def _bootstrap(self) -> None:
        Version = self.store.models.Version
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
                packed = pack(text)
                Version.create(number=1, content=text if packed is None else None, packed=packed,
                               content_hash=content_hash(text),
                               created_at=self.clock.stamp(), summary="initial document", source="initial")
                ctx.emit("version.committed", {"version": 1, "summary": "initial document", "source": "initial",
                                                "content_hash": content_hash(text), "proposal_id": None,
                                                "author": None, "lines": [1, text.count("\n") + 1]})
            return wid

        self.workspace_id = self.store.write(init)
        self.follower.adopt(1)

    def _read_file(self) -> str | None:
        """The file's text, or None after handling a file the room cannot keep.

        A missing file, or one truncated to nothing while the head has text
        and no process has it open for writing (an editor saving in place is
        waited for: :func:`~.filesync.open_for_writing`), gets the head written back (and the event says so, ``reason:
        "missing"`` or ``"empty"``, with ``written_back: true``). A file that is not UTF-8
        (or not a regular file) is moved aside to ``<name>.rejected-<time>``
        beside it (nothing is lost), the head is written back and a
        ``document.external_edit_rejected`` event says where the bytes went.
        """
        head = self.head()
        path = self.document_path
        # written back only over the file as it was read (an empty or missing file saved meanwhile
        # is read again at the next look), else over whatever is left after setting it aside
        seen: FileStat | None | Literal[False] = file_state(path)
        try:
            text = path.read_bytes().decode("utf-8")
            if text or not head.text:
                return text
            if open_for_writing(path):
                return None  # an editor is saving in place (truncated, not yet written): wait for it
            reason, saved = "empty", None  # truncated to nothing: a mishap, never taken as an edit
        except FileNotFoundError:
            reason, saved, seen = "missing", None, None
        except UnicodeDecodeError as exc:
            reason, saved, seen = f"not UTF-8 (byte {exc.start})", self._set_aside(), False
        except OSError as exc:
            reason, saved, seen = f"not a readable file ({exc.strerror or exc})", self._set_aside(), False
        try:
            write_atomic(path, head.text, expect=seen)
        except FileChanged:
            return None
        except OSError as exc:
            log.error("cannot write %s back: %s", path, exc)
            return None
        self.follower.adopt(head.number)
        log.warning("%s was %s; wrote back version %d%s", path, reason, head.number,
                    f" (its bytes are in {saved})" if saved else "")
        self.store.write(lambda ctx: ctx.emit(
            "document.external_edit_rejected",
            {"reason": reason, "saved_as": saved, "head_version": head.number, "written_back": True}))
        return None

    def _set_aside(self) -> str | None:
        """Move the file out of the way (bytes kept); its new path, or None."""
        stamp = self.clock.now().strftime("%Y%m%dT%H%M%S%fZ")
        target = self.document_path.with_name(f"{self.document_path.name}.rejected-{stamp}")
        try:
            self.document_path.rename(target)
        except OSError as exc:
            log.error("cannot move %s aside: %s", self.document_path, exc)
            return None
        return str(target)

    def reconcile_file(self) -> str:
        """Make the file and the head agree after a start; returns what it did.

        - ``"clean"``: the file is the head.
        - ``"repaired"``: the file is an older version (the room stopped
          between a commit and the file following it): the head is written
          back; no version is made.
        - ``"missing"``: the file is gone (or was not UTF-8, then moved
          aside first): the head is written back.
        - ``"external"``: anything else is an edit made outside the room: it
          becomes a new version by the local operator (``source:
          external``) with a ``document.external_edit`` event. Never lost,
          never overwritten.
        """
        Version = self.store.models.Version
        head = self.head()
        text = self._read_file()
        if text is None:
            return "missing"
        if text == head.text:
            self.follower.adopt(head.number)
            return "clean"
        older = (Version.select(Version.number)
                 .where((Version.content_hash == content_hash(text)) & (Version.number < head.number))
                 .order_by(Version.number.desc()).first())
        if older is not None and self.version_text(older.number) == text:
            write_atomic(self.document_path, head.text)
            self.follower.adopt(head.number)
            log.warning("%s was at version %d; repaired to the head %d", self.document_path,
                        older.number, head.number)
            return "repaired"
        self.follower.adopt(head.number)
        self.store.write(lambda ctx: self._record_external(ctx, text, head.number))
        return "external"

    def _record_external(self, ctx: WriteContext, text: str, file_version: int,
                         seen: FileStat | None | Literal[False] = False) -> None:
        """Commit an outside edit made to the file while it held ``file_version``.

        If the head has moved past ``file_version`` (the file had not caught
        up yet), the edit is merged three ways onto the head when it can be;
        otherwise the edited text is taken as it is (the head before it stays
        in history).
        """
        head = self.head()
        merged_with = None
        if file_version < head.number:
            merged = merge3_text(self.version_text(file_version), text, head.text)
            if merged.text is not None:  # clean
                text, merged_with = merged.text, head.number
        old_lines, new_lines = self.head_lines(), regions.lines_of(text)
        delta = hunk(old_lines, new_lines)
        real = line_hunks(old_lines[delta["start"] - 1:delta["end"]], delta["lines"], delta["start"] - 1)
        row = self._commit(ctx, text, actor=OPERATOR, summary="edit made outside the room", source="external",
                           new_lines=new_lines, delta=delta)
        ctx.emit("document.external_edit", {"version": row.number, "content_hash": row.content_hash,
                                            "file_version": file_version, "merged_with": merged_with,
                                            "hunks": new_ranges(real)})
        ctx.after_commit.insert(0, lambda: self.follower.adopt(file_version, seen))

    def sync_external(self) -> None:
        """Record an outside edit made since the file last followed the head.

        Cheap when nothing changed (one ``stat``). Called before every
        operation that commits, so a proposal or write never overwrites an
        outside edit: the edit becomes the head first and the operation
        rebases onto it or sees ``stale_version``.
        """
        follower = self.follower
        if not follower.diverged:
            if follower.busy():
                # our own write is in flight; an outside edit made meanwhile
                # makes the follower stop (diverged) and is recorded next time
                return
            if file_state(self.document_path) == follower.stat:
                return
        seen = file_state(self.document_path)  # before reading: a save made after it is a change from it
        text = self._read_file()
        if text is None:
            return
        digest = content_hash(text)
        # With no write of the room's in flight (checked above) the room's own text is the head's: the
        # text of an earlier version (an editor's undo, a stale buffer saved) is an edit like any other.
        if digest == self.head().hash:
            self.follower.adopt(self.head().number, seen)
            return
        file_version = self.follower.on_disk or self.head().number
        self.store.write(lambda ctx: self._record_external(ctx, text, file_version, seen))

    def watch_file(self) -> bool:
        """Room timer (and inotify's nudge): record a change made to the file outside the room.

        Cheap when nothing changed (one ``stat``). A change is taken once it
        has settled: the file is in the same state (size, mtime, inode, or
        gone) at two looks at least :data:`FILE_SETTLE_SECONDS` apart, so an
        editor's save (truncate, then write) is never caught half done, nor
        a file being replaced taken for a deleted one. Then it is what
        :meth:`sync_external` makes of it: an ``external`` version, or the
        head written back over a deleted or emptied file. The room's own
        writes are never taken for outside edits (the follower's state and
        content hashes). True when it looked at the file's content.
        """
        follower = self.follower
        if follower.busy():
            return False  # our own write is in flight
        state = file_state(self.document_path)
        if state == follower.stat and not follower.diverged:
            self._file_seen = None
            return False
        now = time.monotonic()
        seen = self._file_seen
        if seen is None or seen[0] != state:
            self._file_seen = (state, now)
            return False
        if now - seen[1] < FILE_SETTLE_SECONDS:
            return False
        self._file_seen = None
        self.sync_external()
        return True

    def close(self) -> None:
        """Stop the checkpoint warmer, write the head to the file if it is behind, then close the sidecar."""
        self.stop_warming()
        self.follower.close()
        self.store.close()
