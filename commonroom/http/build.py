"""Wiring of a room's parts inside the worker: engine, live hub, both apps."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from ..engine import Engine
from .app import create_app


def build_room(document: Path, owner_token_hash: str) -> tuple[Engine, Any, Any, list[Callable]]:
    """``(engine, owner_app, ingress_app, shutdown_hooks)`` for ``document``."""
    engine = Engine.open(document)
    owner_app = create_app(engine, "owner", owner_token_hash)
    ingress_app = create_app(engine, "ingress")
    return engine, owner_app, ingress_app, [engine.close]
