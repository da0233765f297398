"""The sidecar ``<file>.commonroom.db``: models, the one write path, the ring."""

from .db import RING_SIZE, SCHEMA_VERSION, Store, WriteContext, sidecar_path

__all__ = ["RING_SIZE", "SCHEMA_VERSION", "Store", "WriteContext", "sidecar_path"]
