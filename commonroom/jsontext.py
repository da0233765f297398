"""Parsing JSON from the wire, refusing what the room could not store or echo.

``json.loads`` accepts things that later break a room: the non-standard
constants ``NaN``, ``Infinity`` and ``-Infinity`` (and numbers such as
``1e400`` that overflow to them), which strict JSON parsers reject when
echoed back; integers of any length (Python refuses to convert more than
4,300 digits, so ``json.loads`` itself raises past that); escaped lone
surrogates (``"\\ud800"``), which decode to a ``str`` that cannot be encoded
as UTF-8 (SQLite, the file, every response would fail), and nesting so deep
that parsing or validating it exhausts the interpreter's recursion limit.
:func:`loads` refuses both with :class:`NotJson`, a ``ValueError`` whose
message says why; adapters turn it into ``invalid_request`` (HTTP) or a
JSON-RPC parse error (MCP).
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

#: Deepest array/object nesting accepted.
MAX_DEPTH = 64
#: Most digits (sign included) of an integer literal: every 64-bit integer fits.
MAX_INTEGER_DIGITS = 20

_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")


class NotJson(ValueError):
    """The text is not JSON the room accepts (see the module docstring)."""


def loads(data: bytes | str) -> Any:
    """Parse ``data`` (UTF-8 bytes or str); raise :class:`NotJson` if unacceptable."""
    raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data
    try:
        text = raw.decode("utf-8") if isinstance(data, bytes) else data
        # a decoder alone reads a BOM as a bad value; json.loads refuses it in its own words
        value = json.loads(text) if text.startswith("\ufeff") else _DECODER.decode(text)
    except UnicodeDecodeError as exc:
        raise NotJson(f"not UTF-8: {exc.reason} at byte {exc.start}") from None
    except json.JSONDecodeError as exc:
        raise NotJson(str(exc)) from None
    except RecursionError:
        raise NotJson(f"nested deeper than {MAX_DEPTH} levels") from None
    if raw.count(b"[") + raw.count(b"{") > MAX_DEPTH and _depth(value) > MAX_DEPTH:
        raise NotJson(f"nested deeper than {MAX_DEPTH} levels")
    if _SURROGATE_ESCAPE.search(raw):
        try:
            json.dumps(value, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError:
            raise NotJson("a \\u escape is a lone UTF-16 surrogate, not a character") from None
    return value


def _constant(name: str) -> Any:
    raise NotJson(f"{name} is not JSON (strict JSON has no NaN or Infinity)")


def _integer(text: str) -> int:
    if len(text) > MAX_INTEGER_DIGITS:
        raise NotJson(f"an integer of {len(text)} characters is longer than {MAX_INTEGER_DIGITS}")
    return int(text)


def _float(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise NotJson(f"{text[:40]} is too large for a number")
    return value


#: One decoder for every call (``json.loads`` with hooks builds a new one each time).
_DECODER = json.JSONDecoder(parse_constant=_constant, parse_int=_integer, parse_float=_float)
#: One encoder for every call (``json.dumps`` with options builds a new one each time).
_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def dumps(value: Any) -> str:
    """Compact strict JSON text (non-ASCII kept); ``ValueError`` for NaN or Infinity."""
    return _ENCODER.encode(value)


def _depth(value: Any) -> int:
    deepest = 0
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            deepest = max(deepest, depth)
            stack.extend((v, depth + 1) for v in item.values())
        elif isinstance(item, list):
            deepest = max(deepest, depth)
            stack.extend((v, depth + 1) for v in item)
    return deepest
