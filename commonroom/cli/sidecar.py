"""``ce sidecar size FILE`` and ``ce sidecar compact FILE``: the operator's view of the sidecar.

``size`` reads the sidecar directly (read-only; the room may run or not);
``compact`` is one write of the room's one writer: through the owner port
when the room runs, else offline under the writer lock (as ``ce invite``).
Both are operations of the table (``sidecar_report``, ``sidecar_compact``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

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
    """Repack checkpoints stored before schema 10, then VACUUM (through the room if it runs, else offline)."""
    document = require_document(file)
    show(operator_write(document, "sidecar_compact", {}), "owner#SidecarCompaction")
