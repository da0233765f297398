"""The engine's core: the room's files, the actor, capability checks, the head.

Every engine method takes an :class:`Actor` first (a session, or the local
operator) and checks the capability the route or tool needs with
:func:`require`. Adapters only translate; they never decide.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from commonroom.generated.types.boards import Observation
from commonroom.generated.types.editing import VersionInfo

from .. import conventions, jsontext, numbers, regions
from ..clock import Clock
from ..errors import InvalidRequest, PermissionDenied
from ..store import Store, WriteContext
from ..store.rows import M, select_rows, where_sql
from ..vocabulary import CAPABILITIES
from .actor import Actor
from .checkpoints import CHECKPOINT_CACHE_BYTES, CHECKPOINT_JSON_CACHE_BYTES, CheckpointLines, CheckpointWarmer
from .pieces import EncodedLines
from .segments import Segments
from .sessions_cache import SessionCache

if TYPE_CHECKING:
    from ..store.models import Version as VersionRow
    from .filesync import FileFollower
    from .segments import Segments

DEFAULT_LIMIT = 50


OPERATOR = Actor(kind="operator", capabilities=frozenset(CAPABILITIES), participant_name="operator")


def require(actor: Actor, capability: str) -> None:
    """Raise ``PermissionDenied`` unless ``actor`` holds ``capability``."""
    if capability not in actor.capabilities:
        raise PermissionDenied(
            f"this session lacks the {capability!r} capability",
            details={"required": capability, "granted": sorted(actor.capabilities)},
        )


def content_hash(text: str) -> str:
    """``sha256:<hex>`` of the UTF-8 bytes of ``text``."""
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


def parse_limit(value: Any, default: int = DEFAULT_LIMIT) -> int:
    """A list ``limit``: 1 to 200 (seed: "List endpoints accept 1 to 200 items").

    ``None`` → ``default``; anything else outside 1..200 or not an integer →
    ``InvalidRequest`` with ``details.parameter = "limit"``.
    """
    if value is None:
        return default
    number: int | None = None
    if isinstance(value, int) and not isinstance(value, bool):
        number = value
    elif isinstance(value, str):
        try:
            number = numbers.natural(value)
        except numbers.NotANumber:
            number = None
    if number is None or not 1 <= number <= 200:
        raise InvalidRequest(
            f"limit must be an integer from 1 to 200, not {value!r}",
            details={"parameter": "limit", "minimum": 1, "maximum": 200},
        )
    return number


def encode_cursor(position: Any) -> str:
    """An opaque cursor for ``position`` (any JSON value)."""
    raw = json.dumps(position, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def decode_cursor(cursor: str | None) -> Any:
    """The position inside ``cursor``; ``None`` for none; ``InvalidRequest`` if broken."""
    if cursor in (None, ""):
        return None
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        return jsontext.loads(raw)
    except (ValueError, TypeError):
        raise InvalidRequest("cursor is not one this room issued", details={"parameter": "cursor"}) from None


def page_after_stamp_and_id(model: type[M], cursor: str | None, size: int, conditions: tuple[str, ...] = (),
                            params: tuple[Any, ...] = ()) -> list[M]:
    """Up to ``size + 1`` rows of ``model`` after a ``[created_at, id]`` cursor, in that order.

    Keyset paging read by SQL text (:func:`commonroom.store.rows.select_rows`)
    for a table with ``created_at`` and ``id`` columns; ``conditions`` (SQL,
    with ``params``) narrow it further. The row past ``size`` tells that a
    next page exists. Pair it with ``encode_cursor([row.created_at, row.id])``;
    a cursor of another shape is ``InvalidRequest``.
    """
    after = _stamp_and_id(cursor)
    keyset = ['("created_at" > ? OR ("created_at" = ? AND "id" > ?))'] if after is not None else []
    return select_rows(model, where_sql([*conditions, *keyset]) + 'ORDER BY "created_at", "id" LIMIT ?',
                       [*params, *([after[0], after[0], after[1]] if after is not None else []), size + 1])


def _stamp_and_id(cursor: str | None) -> list[str] | None:
    """The ``[created_at, id]`` of a cursor, None without one; ``InvalidRequest`` for any other shape."""
    after = decode_cursor(cursor)
    if after is not None and not (isinstance(after, list) and len(after) == 2
                                  and all(isinstance(a, str) for a in after)):
        raise InvalidRequest("cursor is not one this room issued", details={"parameter": "cursor"})
    return after


@dataclass
class Head:
    """The head version, cached in memory (the room is the only writer)."""

    number: int
    text: str
    hash: str
    lines: list[str] | None = None
    conventions: "conventions.Conventions | None" = None


@dataclass
class EngineBase:
    """State every engine part shares. Build with :meth:`commonroom.engine.Engine.open`."""

    document_path: Path
    store: Store
    clock: Clock
    workspace_id: str = ""
    _head: Head | None = field(default=None, repr=False)
    #: live sessions by token digest (:mod:`commonroom.engine.sessions_cache`)
    session_cache: SessionCache = field(default_factory=SessionCache, repr=False)

    # -- what the parts keep in memory (each written by the part named; declared here, so the
    # -- engine's whole state is in one place). All of it can be rebuilt from the sidecar.
    #: the file's state at the room timer's last look, while it differs from what the room wrote,
    #: and when it was first seen so (``Engine.watch_file``: a change is taken once it has settled)
    _file_seen: tuple[Any, float] | None = field(default=None, init=False, repr=False)
    #: participant id → name (names never change): :meth:`participant_name`
    _names: dict[str, str] = field(default_factory=dict, init=False, repr=False)
    #: version number → text of the last few versions read (``versions``: at most ``_CACHE_SIZE``)
    _version_cache: OrderedDict[int, str] = field(default_factory=OrderedDict, init=False, repr=False)
    #: checkpoints' text lines, and their JSON escapes (``versions``, :mod:`commonroom.engine.checkpoints`)
    _checkpoints: CheckpointLines[tuple[str, ...]] = field(
        default_factory=lambda: CheckpointLines(CHECKPOINT_CACHE_BYTES), init=False, repr=False)
    _checkpoints_json: CheckpointLines[EncodedLines] = field(
        default_factory=lambda: CheckpointLines(CHECKPOINT_JSON_CACHE_BYTES), init=False, repr=False)
    #: the thread filling both checkpoint caches, while one runs (``versions.warm_checkpoints``)
    _warmer: CheckpointWarmer | None = field(default=None, init=False, repr=False)
    #: ``(head, hunks since the last checkpoint, their stored size)`` as of the last commit (``versions._chain``)
    _chain_at: tuple[int, int, int] | None = field(default=None, init=False, repr=False)
    #: the stored checkpoints' numbers and the segments read so far, made at first use (``versions._segments``)
    _segments_kept: Segments | None = field(default=None, init=False, repr=False)
    #: the sidecar's board token key, read once (``board_observation``)
    _board_token_key: bytes | None = field(default=None, init=False, repr=False)
    #: observation answers while the database is unchanged (``board_observation._observe_now``)
    _observe_cache: dict[tuple[Any, ...], Observation] = field(default_factory=dict, init=False, repr=False)
    #: "nothing to piggyback" answers by (connection, session) (``piggyback``)
    _quiet: dict[tuple[Any, str], tuple[tuple[int, int], Any, Any]] = field(default_factory=dict, init=False,
                                                                             repr=False)

    def __post_init__(self) -> None:
        self.store.watchers.append(self.session_cache.observe)

    @property
    def file_name(self) -> str:
        """The document's file name (no folder)."""
        return self.document_path.name

    def head(self) -> Head:
        """The head version (number, text, hash).

        On the writer thread inside a group commit it is the version an
        earlier write of the batch made (not durable yet); everywhere else
        the committed head.
        """
        staged = self.store.staged("head")
        if staged is not None:
            return staged
        if self._head is None:
            Version = self.store.models.Version
            row = (Version.select(Version.number, Version.content_hash)
                   .order_by(Version.number.desc()).get())
            self._head = Head(row.number, self._reconstruct(row.number), row.content_hash)
        return self._head

    def _reconstruct(self, number: int) -> str:
        """The text of version ``number`` from the sidecar (see ``versions``)."""
        raise NotImplementedError

    if TYPE_CHECKING:
        # What one part calls on another (they are composed in ``Engine``), so
        # each part type-checks on its own; the checker holds the parts to these.
        follower: FileFollower = field(init=False)

        def sync_external(self) -> None: ...
        def version_text(self, number: int) -> str: ...
        def _segments(self) -> Segments: ...
        def _commit(self, ctx: WriteContext, text: str, *, actor: Actor, summary: str, source: str,
                    proposal_id: str | None = None, new_lines: list[str] | None = None,
                    delta: dict[str, Any] | None = None) -> VersionRow: ...
        def _version_info(self, row: VersionRow) -> VersionInfo: ...
        def _changes(self, after: int, upto: int) -> list[dict[str, Any]]: ...
        def _shift_leases(self, delta: dict[str, Any], number: int, old_lines: list[str]) -> Any: ...
        def _sweep_expired(self, ctx: WriteContext) -> int: ...
        def _prune_peers(self, recipient: str) -> int: ...
        def _check_leases(self, actor_sessions: set[str | None], span: regions.Span, text: str) -> None: ...
        def _rebase(self, base_text: str, span: regions.Span,
                    text: str) -> tuple[list[str] | None, list[dict[str, Any]]]: ...

    def participant_name(self, participant_id: str | None) -> str | None:
        """A participant's name (names never change, so they are cached)."""
        if participant_id is None:
            return None
        cache = self._names
        if participant_id not in cache:
            Participant = self.store.models.Participant
            row = Participant.get_or_none(Participant.id == participant_id)
            if row is None:
                return None
            cache[participant_id] = row.name
        return cache[participant_id]

    def head_lines(self) -> list[str]:
        """The head's lines (``regions.lines_of``), computed once per version."""
        head = self.head()
        if head.lines is None:
            from ..regions import lines_of

            head.lines = lines_of(head.text)
        return head.lines

    def head_conventions(self) -> conventions.Conventions:
        """The head's conventions (``conventions.conventions_of``: newline style,
        final newline, BOM), computed once per version (a few scans of the text)."""
        head = self.head()
        if head.conventions is None:
            head.conventions = conventions.conventions_of(head.text)
        return head.conventions

    def _set_head(self, number: int, text: str, digest: str, lines: list[str] | None = None) -> None:
        self._head = Head(number, text, digest, lines)
