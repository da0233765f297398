"""The invitation token: ``commonroom://join/<base64url json>`` (seed protocol.txt).

The JSON object holds ``protocol``, ``version``, ``transport``,
``workspace_id``, ``secret``, ``expires_at`` and ``capabilities``; keys are
sorted and the raw JSON is at most :data:`MAX_JSON_BYTES` bytes. ``version``
is ``"1"``; a numeric ``1`` is also accepted.

Decoding errors:

- :class:`~commonroom.errors.UnsupportedVersion` for a version other than 1;
- :class:`~commonroom.errors.InvalidRequest` for anything else broken (prefix,
  base64, JSON, size, shape), with ``details.reason``.
"""

from __future__ import annotations

import base64
import binascii
import datetime as _dt
import json
import re
from typing import Any

from . import PROTOCOL, PROTOCOL_VERSION
from .clock import parse_rfc3339
from .errors import InvalidRequest, UnsupportedVersion

PREFIX = "commonroom://join/"
MAX_JSON_BYTES = 8192
_BASE64URL = re.compile(r"[A-Za-z0-9_-]+={0,2}")


def encode(payload: dict[str, Any]) -> str:
    """The token for ``payload`` (validated; keys sorted; unpadded base64url).

    Raises ``InvalidRequest`` when the payload is not a valid invitation or its
    JSON exceeds 8192 bytes.
    """
    from . import schemas  # jsonschema only when a token is checked

    schemas.validate("invitation", payload)
    raw = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    data = raw.encode("utf-8")
    if len(data) > MAX_JSON_BYTES:
        raise InvalidRequest(
            f"invitation JSON is {len(data)} bytes; the limit is {MAX_JSON_BYTES}",
            details={"reason": "too_large", "bytes": len(data)},
        )
    return PREFIX + base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _broken(reason: str, message: str) -> InvalidRequest:
    return InvalidRequest(f"invitation token is broken: {message}", details={"reason": reason})


def decode(token: str) -> dict[str, Any]:
    """The payload of ``token``, checked (see module docstring for errors).

    A numeric version 1 is normalised to ``"1"`` in the returned dict.
    """
    token = token.strip()
    if not token.startswith(PREFIX):
        raise _broken("prefix", f"it must start with {PREFIX}")
    body = token[len(PREFIX) :]
    if not body or len(body) > (MAX_JSON_BYTES * 4) // 3 + 4:
        raise _broken("size", "empty or longer than the 8192-byte limit")
    try:
        if not _BASE64URL.fullmatch(body):
            raise ValueError("not the base64url alphabet")
        data = base64.urlsafe_b64decode(body.rstrip("=") + "=" * (-len(body.rstrip("=")) % 4))
    except (binascii.Error, ValueError):
        raise _broken("base64", "not base64url") from None
    if len(data) > MAX_JSON_BYTES:
        raise _broken("size", f"JSON is {len(data)} bytes; the limit is {MAX_JSON_BYTES}")
    try:
        payload = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise _broken("json", "not UTF-8 JSON") from None
    if not isinstance(payload, dict):
        raise _broken("json", "not a JSON object")
    if "version" in payload and not _is_version_one(payload["version"]):
        raise UnsupportedVersion(
            f"invitation version {payload['version']!r} is not supported; this room speaks 1",
            details={"requested": payload["version"], "supported": [PROTOCOL_VERSION]},
        )
    if payload.get("protocol") != PROTOCOL:
        raise _broken("protocol", f"protocol must be {PROTOCOL!r}")
    try:
        from . import schemas

        schemas.validate("invitation", payload)
    except InvalidRequest as exc:
        raise InvalidRequest(
            f"invitation token is broken: {exc.details.get('pointer') or '/'}: "
            f"{exc.details.get('reason')}",
            details={**exc.details, "reason": "shape"},
        ) from None
    try:
        parse_rfc3339(payload["expires_at"])
    except ValueError:
        raise InvalidRequest("invitation token is broken: /expires_at: not a date and time",
                             details={"pointer": "/expires_at", "reason": "shape"}) from None
    payload["version"] = PROTOCOL_VERSION
    return payload


def _is_version_one(value: Any) -> bool:
    """``"1"``, or the JSON number 1 (``true`` is not a number here)."""
    if isinstance(value, bool):
        return False
    return value == PROTOCOL_VERSION or (isinstance(value, (int, float)) and value == 1)


def expired(payload: dict[str, Any], now: _dt.datetime | None = None) -> bool:
    """Whether the invitation's ``expires_at`` has passed (``now`` defaults to the wall clock).

    A decoded payload's ``expires_at`` is a valid RFC 3339 stamp (the schema checks it).
    """
    moment = now or _dt.datetime.now(_dt.timezone.utc)
    return parse_rfc3339(payload["expires_at"]) <= moment


def masked(payload: dict[str, Any]) -> dict[str, Any]:
    """A copy fit to print: the secret replaced by ``"cri_…****"``."""
    shown = dict(payload)
    secret = str(shown.get("secret", ""))
    shown["secret"] = (secret[:4] + "…" if len(secret) > 8 else "") + "****"
    return shown


def page_link(token: str) -> str:
    """The participant page's link carrying ``token``: ``http://ADDR:PORT/#join=<base64url>``.

    The invitation rides in the fragment, which a browser never sends to
    a server (no log, no ``Referer`` holds it). An IPv6 address is written
    in brackets. Raises ``InvalidRequest`` (``details.reason:
    "transport"``) for a ``local`` (Unix socket) or portless transport:
    a browser cannot open those.
    """
    payload = decode(token)
    hint = payload["transport"]
    if hint.get("type") == "local" or not hint.get("port"):
        raise InvalidRequest("a browser link needs a TCP transport (loopback or a plugin such as tailcat); "
                             "this invitation is for the local socket: give it as a token instead",
                             details={"reason": "transport", "transport": hint.get("type")})
    address = str(hint["address"])
    host = f"[{address}]" if ":" in address and not address.startswith("[") else address
    return f"http://{host}:{hint['port']}/#join={token.strip()[len(PREFIX):]}"
