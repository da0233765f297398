"""commonroom: people and AI agents working together on one markdown file."""

from typing import Final

__version__ = "0.1.0"
PROTOCOL: Final = "commonroom"
PROTOCOL_VERSION: Final = "1"
