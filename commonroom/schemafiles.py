"""The schema files themselves (``schema/*.json``), read once: the bottom of everything that reads a shape.

They ship as the package data of ``commonroom.schema`` (``pyproject.toml``
maps the top-level ``schema/`` directory there, in editable and regular
installs alike). :mod:`commonroom.bundle` (every ``$ref`` inlined) and
:mod:`commonroom.schemas` (validators) both build on :func:`load_all`, so
this module imports neither (nor jsonschema).
"""

from __future__ import annotations

import json
from functools import lru_cache
from importlib.resources import files
from typing import Any

#: The package whose data files are ``schema/*.json``.
PACKAGE = "commonroom.schema"


def _sorted(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    return dict(sorted(pairs, key=lambda pair: pair[0]))


@lru_cache(maxsize=1)
def load_all() -> dict[str, dict[str, Any]]:
    """Every schema file, by file name (``"room.json"``), keys sorted at every level.

    Read once and shared: callers must not change what they get (copy first).
    """
    found = sorted((f for f in files(PACKAGE).iterdir() if f.name.endswith(".json")), key=lambda f: f.name)
    return {f.name: json.loads(f.read_text("utf-8"), object_pairs_hook=_sorted) for f in found}
