"""Store each operation's HTTP route into ``commonroom/cli/routes.json``, which ``ce`` calls operations by.

:mod:`commonroom.cli.routes` reads it instead of importing the operation
table (and the engine under it) at ``ce``'s start. ``python -m codegen``
writes it; ``python -m codegen --check`` fails when it differs from
:data:`commonroom.operations.OPERATIONS`. Per operation with an HTTP
binding: ``method``, ``path``, ``aliases`` (wire name → input property)
and ``json`` (the query properties the HTTP adapter reads as JSON text,
:class:`commonroom.http.operations.Binding`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from commonroom.cli.routes import ROUTES_FILE

ROOT = Path(__file__).resolve().parents[1]
ROUTES_PATH = ROOT / "commonroom" / "cli" / ROUTES_FILE


def spec() -> dict[str, Any]:
    """``{operation: {"method", "path", "aliases", "json"}}`` from the operation table, in its order."""
    from commonroom.http.operations import Binding
    from commonroom.operations import OPERATIONS

    out: dict[str, Any] = {}
    for op in OPERATIONS:
        if op.http is None:
            continue
        binding = Binding(op)
        out[op.name] = {"method": op.http.method, "path": op.http.path, "aliases": dict(op.http.aliases),
                        "json": [prop for prop in binding.query.values() if binding.kinds[prop] == "json"]}
    return out


def render() -> str:
    """The routes as stored: indented JSON, final newline."""
    return json.dumps(spec(), indent=2) + "\n"


def stale(path: Path = ROUTES_PATH) -> bool:
    """Whether ``path`` is missing or differs from :func:`render`."""
    return not path.exists() or path.read_bytes() != render().encode("utf-8")


def write(path: Path = ROUTES_PATH) -> None:
    """Write :func:`render` to ``path`` (UTF-8)."""
    path.write_bytes(render().encode("utf-8"))
