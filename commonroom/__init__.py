"""commonroom: people and AI agents working together on one markdown file."""

__version__ = "0.1.0"
PROTOCOL = "commonroom"
PROTOCOL_VERSION = "1"
