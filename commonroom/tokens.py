"""Secrets: generation, hashing and constant-time comparison.

Session bearer tokens, invitation secrets and the owner token are 256-bit
random strings. Only ``sha256`` hex digests are stored; lookups go by digest
and the final comparison uses :func:`hmac.compare_digest`. Nothing here logs.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets as _secrets

SESSION_PREFIX = "crs_"
INVITATION_PREFIX = "cri_"
OWNER_PREFIX = "cro_"


def new_secret(prefix: str) -> str:
    """A fresh token: ``prefix`` + 43 URL-safe characters (32 random bytes)."""
    return prefix + _secrets.token_urlsafe(32)


def new_id(prefix: str) -> str:
    """A public, non-secret identifier such as ``s_3f9a…`` (96 random bits)."""
    return prefix + _secrets.token_hex(12)


def digest(token: str) -> str:
    """The stored form of a secret: sha256 hex of its UTF-8 bytes."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def matches(token: str, stored_digest: str) -> bool:
    """Constant-time check that ``token`` hashes to ``stored_digest``."""
    return hmac.compare_digest(digest(token), stored_digest)
