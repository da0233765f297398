"""The invitation token (seed protocol.txt, Invitation): ``commonroom://join/<base64url json>``.

Keys sorted, raw JSON at most 8192 bytes, version "1" (numeric 1 accepted);
another version is ``unsupported_version``, anything else broken is
``invalid_request`` with ``details.reason``.
"""

from __future__ import annotations

import base64
import json

import pytest

from commonroom import invitation, schemas
from commonroom.errors import InvalidRequest, UnsupportedVersion

SECRET = "cri_" + "s" * 43


def payload(**changes) -> dict:
    base = {
        "protocol": "commonroom",
        "version": "1",
        "transport": {"type": "loopback", "address": "127.0.0.1", "port": 7711,
                      "encrypted": False, "mode": "private"},
        "workspace_id": "w_0123456789abcdef01234567",
        "secret": SECRET,
        "expires_at": "2026-11-30T08:00:00.000000+00:00",
        "capabilities": ["read", "observe"],
    }
    base.update(changes)
    return base


def raw_token(obj, *, pad: bool = False, sort: bool = True) -> str:
    """A token built by hand (no validation), to feed decode what encode refuses."""
    data = json.dumps(obj, sort_keys=sort, separators=(",", ":")).encode() if not isinstance(obj, bytes) else obj
    text = base64.urlsafe_b64encode(data).decode()
    return invitation.PREFIX + (text if pad else text.rstrip("="))


def body_of(token: str) -> bytes:
    text = token[len(invitation.PREFIX):]
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def broken(token: str) -> InvalidRequest:
    with pytest.raises(InvalidRequest) as info:
        invitation.decode(token)
    assert type(info.value) is InvalidRequest
    return info.value


def test_round_trip():
    token = invitation.encode(payload())
    assert token.startswith("commonroom://join/")
    assert invitation.decode(token) == payload()


def test_token_is_unpadded_base64url_of_sorted_compact_json():
    token = invitation.encode(payload(workspace_id="w_?>?>"))  # bytes that need - and _
    text = token[len(invitation.PREFIX):]
    assert "=" not in text and "+" not in text and "/" not in text
    raw = body_of(token)
    assert list(json.loads(raw)) == sorted(payload())
    assert raw == json.dumps(payload(workspace_id="w_?>?>"), sort_keys=True, separators=(",", ":")).encode()


def test_padded_and_unsorted_tokens_are_still_read():
    assert invitation.decode(raw_token(payload(), pad=True)) == payload()
    assert invitation.decode(raw_token(payload(), sort=False)) == payload()


def test_surrounding_whitespace_is_ignored():
    assert invitation.decode("  " + invitation.encode(payload()) + "\n") == payload()


def test_numeric_version_one_is_accepted_and_normalised():
    decoded = invitation.decode(raw_token(payload(version=1)))
    assert decoded["version"] == "1"


@pytest.mark.parametrize("version", ["2", 2, "1.0", "01", "", None, True, 1.5, [1]])
def test_other_versions_are_unsupported(version):
    with pytest.raises(UnsupportedVersion) as info:
        invitation.decode(raw_token(payload(version=version)))
    assert info.value.code == "unsupported_version"
    assert info.value.status == 400
    assert info.value.details["supported"] == ["1"]


def test_version_is_checked_before_the_rest_of_the_shape():
    """A future version may change the shape: report the version, not the shape."""
    future = {"protocol": "commonroom", "version": "2", "something": "new"}
    with pytest.raises(UnsupportedVersion):
        invitation.decode(raw_token(future))


@pytest.mark.parametrize(
    "token, reason",
    [
        ("", "prefix"),
        ("http://join/abc", "prefix"),
        ("commonroom://join/", "size"),
        ("commonroom://join/***", "base64"),
        ("commonroom://join/" + base64.urlsafe_b64encode(b"\xff\xfe").decode(), "json"),
        ("commonroom://join/" + base64.urlsafe_b64encode(b"{not json").decode(), "json"),
        ("commonroom://join/" + base64.urlsafe_b64encode(b"[1,2]").decode(), "json"),
    ],
)
def test_broken_tokens_are_invalid_request(token, reason):
    error = broken(token)
    assert error.details["reason"] == reason
    assert error.status == 400
    assert schemas.errors_of("error", error.to_dict()) == []


def test_wrong_protocol_is_invalid_request():
    assert broken(raw_token(payload(protocol="otherroom"))).details["reason"] == "protocol"


@pytest.mark.parametrize(
    "changes, pointer",
    [
        ({"secret": "short"}, "/secret"),
        ({"capabilities": ["read", "fly"]}, "/capabilities/1"),
        ({"expires_at": "2026-11-30T08:00:00Z"}, "/expires_at"),
        ({"transport": {"type": "pigeon"}}, "/transport"),
        ({"extra": 1}, ""),
    ],
)
def test_shape_failures_name_the_pointer(changes, pointer):
    error = broken(raw_token(payload(**changes)))
    assert error.details["reason"] == "shape"
    assert error.details["pointer"].startswith(pointer)


def test_missing_field_is_invalid_request():
    data = payload()
    del data["workspace_id"]
    assert broken(raw_token(data)).details["reason"] == "shape"


def _padded_to(size: int) -> dict:
    data = payload(workspace_id="w_")
    overhead = len(json.dumps(data, sort_keys=True, separators=(",", ":")).encode())
    data["workspace_id"] = "w_" + "x" * (size - overhead)
    assert len(json.dumps(data, sort_keys=True, separators=(",", ":")).encode()) == size
    return data


def test_8192_bytes_of_json_is_the_limit():
    at_limit = _padded_to(8192)
    token = invitation.encode(at_limit)
    assert len(body_of(token)) == 8192
    assert invitation.decode(token) == at_limit


def test_8193_bytes_is_refused_on_both_sides():
    over = _padded_to(8193)
    with pytest.raises(InvalidRequest) as info:
        invitation.encode(over)
    assert info.value.details["reason"] == "too_large"
    assert broken(raw_token(over)).details["reason"] == "size"


def test_multibyte_characters_count_as_bytes():
    data = payload(workspace_id="w_" + "é" * 4100)  # 8200 bytes of é alone
    with pytest.raises(InvalidRequest):
        invitation.encode(data)


def test_encode_refuses_an_invalid_payload():
    with pytest.raises(InvalidRequest) as info:
        invitation.encode(payload(capabilities=["root"]))
    assert info.value.details["pointer"] == "/capabilities/0"


def test_masked_hides_the_secret():
    shown = invitation.masked(payload())
    assert SECRET not in json.dumps(shown)
    assert shown["secret"].endswith("****")
    assert {k: v for k, v in shown.items() if k != "secret"} == {
        k: v for k, v in payload().items() if k != "secret"
    }
    assert invitation.masked(payload(secret="short"))["secret"] == "****"
