"""Numbers read from the wire as text: one parser, ASCII digits only, bounded.

Every number that arrives as text (a path or query parameter, a header
such as ``Last-Event-ID``, a resource URI, a prompt argument, a cursor)
is read by :func:`natural`: ASCII digits ``0``–``9`` only (no sign, no
blanks, no other scripts' digits such as ``١`` or fullwidth ``１``), at most
:data:`MAX_DIGITS` of them, and within ``minimum``..``maximum``. Python's
``int()`` would take ``" 1"``, ``"١"`` and ``"１"`` and raise ``ValueError``
past 4,300 digits; this never does either. JSON numbers are bounded by
:mod:`commonroom.jsontext` and the schemas.
"""

from __future__ import annotations

import re

#: The largest integer every JSON client keeps exactly (2^53 − 1).
MAX_SAFE = 9_007_199_254_740_991
#: Digits accepted before the value is even looked at (MAX_SAFE has 16).
MAX_DIGITS = 16

_DIGITS = re.compile(r"[0-9]{1,%d}" % MAX_DIGITS)


class NotANumber(ValueError):
    """The text is not a number in range; ``str()`` says why."""


def natural(text: str, *, minimum: int = 0, maximum: int = MAX_SAFE) -> int:
    """``text`` as an integer in ``minimum..maximum``; :class:`NotANumber` otherwise."""
    if not isinstance(text, str) or not _DIGITS.fullmatch(text):
        raise NotANumber(f"must be an integer written with ASCII digits (at most {MAX_DIGITS}), "
                         f"not {_shown(text)}")
    value = int(text)
    if not minimum <= value <= maximum:
        raise NotANumber(f"must be from {minimum} to {maximum}, not {value}")
    return value


def _shown(text: object) -> str:
    shown = repr(text)
    return shown if len(shown) <= 40 else shown[:37] + "…'"
