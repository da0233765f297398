"""``ce sidecar size FILE`` and ``ce sidecar compact FILE``: the operator's view of the sidecar.

``size`` reads the sidecar directly (read-only; the room may run or not);
``compact`` is one write of the room's one writer: through the owner port
when the room runs, else offline under the writer lock (as ``ce invite``).
Both are operations of the table (``sidecar_report``, ``sidecar_compact``).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from ..errors import StorageUnavailable

from .common import handled, operator_read, operator_write, require_document
from .render import show
from .usage import CeTyper

sidecar_app = CeTyper(help="The sidecar: its size by part, and compaction.", no_args_is_help=True,
                      rich_markup_mode=None)

FileArg = Annotated[Path, typer.Argument(help="The room's markdown file.")]


@sidecar_app.command("size")
@handled
def size_command(file: FileArg) -> None:
    """The sidecar's bytes: the file, its WAL, free pages, and by part (versions, checkpoints, events, boards)."""
    show(operator_read(file, "sidecar_report", {}), "owner#SidecarReport")


@sidecar_app.command("compact")
@handled
def compact_command(file: FileArg) -> None:
    """Repack checkpoints stored before schema 10, then VACUUM (through the room if it runs, else offline).

    Offline it upgrades a sidecar of an older schema first, and says so. It exits non-zero
    (storage_unavailable) when VACUUM failed: the repack is kept, the free pages are not given back.
    """
    from ..engine import OPERATOR
    from ..operations import OPERATIONS
    from ..store.migrations import SCHEMA_VERSION

    document = require_document(file)
    upgraded: list[int] = []

    def offline(engine: Any) -> Any:
        if engine.store.upgraded_from is not None:
            upgraded.append(engine.store.upgraded_from)
        return OPERATIONS["sidecar_compact"].bind(engine, OPERATOR, {})

    result = operator_write(document, "sidecar_compact", {}, offline=offline, upgrade=True)
    if upgraded:
        print(f"ce sidecar compact: upgraded the sidecar from schema {upgraded[0]} to {SCHEMA_VERSION} first "
              "(a room of an older commonroom cannot serve it any more)", file=sys.stderr)
    show(result, "owner#SidecarCompaction")
    if not result.get("vacuumed", True):  # an older room answers without it (see render_shapes)
        raise StorageUnavailable(
            f"VACUUM of {document.name}'s sidecar failed, so it was not compacted (why: the room's log, or the "
            "line above when no room runs; "
            f"VACUUM needs about the sidecar's size free on its disk); {result['repacked']} checkpoints "
            "repacked stay committed", details={"reason": "vacuum_failed", "repacked": result["repacked"]})
