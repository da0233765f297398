"""Where the tests' real input lives (see tests/data/README.md)."""

from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data"
#: Real markdown documents (byte-exact copies; CRLF and non-ASCII included).
CORPUS = Path(os.environ.get("COMMONROOM_CORPUS") or DATA / "corpus")
#: The official MCP 2026-07-28 JSON Schemas.
MCP_SCHEMA_DIR = Path(os.environ.get("COMMONROOM_MCP_SCHEMA_DIR") or DATA / "vendor" / "mcp-2026-07-28")
#: The protocol seed.
PROTOCOL_SEED = DATA / "seeds" / "protocol.txt"
#: The workplace folder the copies came from, when it sits beside the checkout.
UPSTREAM = ROOT.parent / "shared"
