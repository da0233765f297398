"""commonroom: people and AI agents working together on one markdown file.

``PROTOCOL`` and ``PROTOCOL_VERSION`` (:mod:`commonroom.protocol`'s
``COMMONROOM_PROTOCOL``, ``COMMONROOM_PROTOCOL_VERSION``) are loaded on
first use: every ``ce`` start imports this package before anything else,
and ``ce --help`` must not pay for :mod:`commonroom.protocol`'s imports
(``typing``, ``base64``): ``ce`` is meant to start at once.
"""

__version__ = "0.1.0"

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (mypy reads the name)
if TYPE_CHECKING:
    from .protocol import COMMONROOM_PROTOCOL as PROTOCOL  # noqa: F401
    from .protocol import COMMONROOM_PROTOCOL_VERSION as PROTOCOL_VERSION  # noqa: F401

_FROM_PROTOCOL = {"PROTOCOL": "COMMONROOM_PROTOCOL", "PROTOCOL_VERSION": "COMMONROOM_PROTOCOL_VERSION"}


def __getattr__(name: str) -> str:
    """``PROTOCOL`` / ``PROTOCOL_VERSION``, read from :mod:`commonroom.protocol` when first asked for."""
    if name in _FROM_PROTOCOL:
        from . import protocol

        return str(getattr(protocol, _FROM_PROTOCOL[name]))
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
