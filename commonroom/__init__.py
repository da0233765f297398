"""commonroom: people and AI agents working together on one markdown file."""

__version__ = "0.1.0"
from .protocol import COMMONROOM_PROTOCOL as PROTOCOL  # noqa: E402,F401
from .protocol import COMMONROOM_PROTOCOL_VERSION as PROTOCOL_VERSION  # noqa: E402,F401
