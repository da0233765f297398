"""Every error code of the room foundation, provoked through HTTP and ``ce``.

One real room serves the whole module. Each HTTP error is checked for its
status, the exact envelope (``error``, ``message``, ``details`` and nothing
else for these codes) and ``schema/error.json``; each ``ce`` failure for its
own exit status (``EXIT_CODES``), an empty stdout and the same envelope as
JSON on stderr.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
import socket
import time
from concurrent.futures import ThreadPoolExecutor
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

import httpx
import pytest

from commonroom import invitation, schemas
from commonroom.errors import EXIT_CODES, STATUS
from commonroom.protocol import MAX_BODY_BYTES
from tests.roomproc import Client, Room, ce

ENVELOPE_KEYS = ["error", "message", "details"]


# ------------------------------------------------------------------ helpers


def check_envelope(body: Any, code: str) -> dict:
    assert isinstance(body, dict), body
    assert list(body) == ENVELOPE_KEYS, body
    assert body["error"] == code, body
    assert isinstance(body["message"], str) and body["message"]
    assert isinstance(body["details"], dict)
    assert schemas.errors_of("error", body) == []
    return body


def http_error(response: httpx.Response, code: str, status: int | None = None) -> dict:
    """Assert ``response`` is the catalogue's ``code``; return the envelope."""
    assert response.status_code == (status or STATUS[code]), response.text
    assert response.headers["content-type"].startswith("application/json")
    return check_envelope(response.json(), code)


def ce_error(done, code: str) -> dict:
    """Assert a ``ce`` run failed with ``code``; return the envelope from stderr."""
    assert done.returncode == EXIT_CODES[code], (done.returncode, done.stdout, done.stderr)
    assert done.stdout == ""
    assert "Traceback" not in done.stderr
    return check_envelope(json.loads(done.stderr), code)


def ce_ok(done) -> Any:
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout) if done.stdout.strip().startswith("{") else done.stdout.strip()


def ce_invite(room: Room, participant: str, *args: str) -> str:
    done = ce("invite", str(room.document), "--participant", participant, *args)
    assert done.returncode == 0, done.stderr
    token = done.stdout.strip()
    assert token.startswith(invitation.PREFIX)
    return token


def ce_join(token: str, session_file: Path) -> dict:
    done = ce("join", token, "--session-file", str(session_file), "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def ce_call(session_file: Path, method: str, path: str, *args: str):
    return ce("call", method, path, "--session-file", str(session_file), *args)


def recode(token: str, **changes: Any) -> str:
    """``token`` with its payload changed, encoded by hand (no validation)."""
    text = token[len(invitation.PREFIX):]
    payload = json.loads(base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)))
    payload.update(changes)
    raw = json.dumps(payload, sort_keys=True, separators=(",", ":")).encode()
    return invitation.PREFIX + base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def invite_http(room: Room, participant: str, caps: list[str], **extra: Any) -> dict:
    r = httpx.post(room.owner + "/owner/invitations",
                   json={"participant": participant, "capabilities": caps, **extra},
                   headers={"Authorization": f"Bearer {room.owner_token}"}, timeout=30)
    assert r.status_code == 201, r.text
    return r.json()


def join_http(room: Room, token: str) -> httpx.Response:
    return httpx.post(room.ingress + "/workspace/join", json={"invitation": token}, timeout=30)


def owner_post(room: Room, path: str, body: Any) -> httpx.Response:
    return httpx.post(room.owner + path, json=body,
                      headers={"Authorization": f"Bearer {room.owner_token}"}, timeout=30)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def when(stamp: str) -> dt.datetime:
    return dt.datetime.fromisoformat(stamp)


def ce_parallel(runs: dict[str, tuple[str, ...]]) -> dict[str, Any]:
    """Run several independent ``ce`` commands at once (each ``ce`` is a new process)."""
    with ThreadPoolExecutor(max_workers=4) as pool:
        futures = {key: pool.submit(ce, *argv, "--json") for key, argv in runs.items()}
        return {key: future.result() for key, future in futures.items()}


@pytest.fixture(scope="module")
def ce_sessions(shared_room: Room, tmp_path_factory) -> dict[str, Path]:
    """Session files made by ``ce join``: ``reader`` (read) and ``watcher`` (observe only)."""
    folder = tmp_path_factory.mktemp("ce-sessions")
    files = {"reader": folder / "reader.json", "watcher": folder / "watcher.json"}
    ce_join(shared_room.invite("ce-reader", "read"), files["reader"])
    ce_join(shared_room.invite("ce-watcher", "observe"), files["watcher"])
    return files


# ------------------------------------------------------------ unauthorized

WORKSPACE_READS = ["/workspace/room", "/workspace/document", "/workspace/participants", "/workspace/session"]


@pytest.mark.parametrize("path", WORKSPACE_READS)
@pytest.mark.parametrize("header", [None, "Basic dXNlcjpwYXNz", "Bearer", "Token abc"])
def test_missing_bearer_http(shared_room, path, header):
    headers = {"Authorization": header} if header else {}
    body = http_error(httpx.get(shared_room.ingress + path, headers=headers, timeout=30), "unauthorized")
    assert body["details"]["reason"] == "missing_bearer"


@pytest.mark.parametrize("path", WORKSPACE_READS)
def test_unknown_bearer_http(shared_room, path):
    r = httpx.get(shared_room.ingress + path, headers={"Authorization": "Bearer crs_" + "A" * 43}, timeout=30)
    assert http_error(r, "unauthorized")["details"]["reason"] == "unknown_bearer"


def test_owner_token_is_not_a_session_bearer(shared_room):
    r = httpx.get(shared_room.ingress + "/workspace/document",
                  headers={"Authorization": f"Bearer {shared_room.owner_token}"}, timeout=30)
    http_error(r, "unauthorized")


def test_unknown_bearer_ce(ce_sessions, tmp_path):
    session_file = tmp_path / "s.json"
    data = json.loads(ce_sessions["reader"].read_text())  # a working session file ...
    data["token"] = "crs_" + "B" * 43                    # ... with a bearer never issued
    session_file.write_text(json.dumps(data))
    body = ce_error(ce_call(session_file, "GET", "/workspace/document"), "unauthorized")
    assert body["details"]["reason"] == "unknown_bearer"


def test_revoked_session_stops_at_once_http(shared_room):
    first = shared_room.join("revokee", "read")
    second = shared_room.join("revokee", "read")  # another window of the same participant
    assert first.get("/workspace/document").status_code == 200
    r = owner_post(shared_room, "/owner/revoke", {"session": first.session["id"]})
    assert r.status_code == 200, r.text
    assert r.json() == {"revoked": True, "kind": "session", "id": first.session["id"]}
    assert schemas.errors_of("owner#RevokeResult", r.json()) == []
    for path in WORKSPACE_READS:  # the very next request, no grace period
        body = http_error(first.get(path), "unauthorized")
        assert body["details"]["reason"] == "revoked"
        assert body["details"]["session_id"] == first.session["id"]
    assert second.get("/workspace/document").status_code == 200, "only that session is revoked"
    again = owner_post(shared_room, "/owner/revoke", {"session": first.session["id"]})
    assert again.status_code == 200 and again.json()["revoked"] is False


def test_revoked_session_ce(shared_room, tmp_path):
    session_file = tmp_path / "s.json"
    joined = ce_join(shared_room.invite("revokee-ce", "read"), session_file)
    assert ce_call(session_file, "GET", "/workspace/document").returncode == 0
    done = ce("revoke", str(shared_room.document), "--session", joined["session"]["id"], "--json")
    assert ce_ok(done) == {"revoked": True, "kind": "session", "id": joined["session"]["id"]}
    body = ce_error(ce_call(session_file, "GET", "/workspace/document"), "unauthorized")
    assert body["details"]["reason"] == "revoked"


def test_revoking_unknown_records_is_not_found(shared_room):
    http_error(owner_post(shared_room, "/owner/revoke", {"session": "s_nope"}), "not_found")
    http_error(owner_post(shared_room, "/owner/revoke", {"invitation": "inv_nope"}), "not_found")
    doc = str(shared_room.document)
    runs = ce_parallel({"session": ("revoke", doc, "--session", "s_nope"),
                        "invitation": ("revoke", doc, "--invitation", "inv_nope")})
    assert ce_error(runs["session"], "not_found")["details"]["session"] == "s_nope"
    assert ce_error(runs["invitation"], "not_found")["details"]["invitation"] == "inv_nope"


# ------------------------------------------------ session and invitation TTLs


@pytest.fixture(scope="module")
def lapsed(shared_room: Room, tmp_path_factory) -> dict[str, Any]:
    """Sessions and invitations with one-second lifetimes, all past their end.

    Built once for the module so the tests share a single short wait. This
    is the end-to-end check that a real room turns lapsed TTLs into the
    right HTTP answers and ``ce`` exit statuses; the TTL rules themselves
    (boundaries, leases, live counts) are tested on an injected clock in
    ``tests/engine/test_engine_ttl.py``.
    """
    folder = tmp_path_factory.mktemp("lapsed")
    room = shared_room
    http_session = room.join("ttl-http", "read", session_ttl_seconds=1)
    assert http_session.get("/workspace/document").status_code == 200, "valid before its TTL"
    http_invitation = room.invite("late-http", "read", expires_in_seconds=1)

    ce_session_file = folder / "ttl.json"
    joined = ce_join(ce_invite(room, "ttl-ce", "--cap", "read", "--session-ttl", "1s"), ce_session_file)
    stored = json.loads(ce_session_file.read_text())
    assert when(joined["session"]["expires_at"]) - when(joined["session"]["created_at"]) == dt.timedelta(seconds=1)
    live = httpx.get(room.ingress + "/workspace/session",
                     headers={"Authorization": f"Bearer {stored['token']}"}, timeout=30)
    assert live.status_code == 200, "valid before its TTL"
    ce_invitation = ce_invite(room, "late-ce", "--cap", "read", "--expires", "1s")

    ends = [when(http_session.session["expires_at"]), when(joined["session"]["expires_at"]),
            when(invitation.decode(http_invitation)["expires_at"]),
            when(invitation.decode(ce_invitation)["expires_at"])]
    wait = (max(ends) - dt.datetime.now(dt.timezone.utc)).total_seconds() + 0.1
    time.sleep(max(wait, 0))
    return {"http_session": http_session, "ce_session_file": ce_session_file,
            "http_invitation": http_invitation, "ce_invitation": ce_invitation}


def test_session_expired_http(lapsed):
    client: Client = lapsed["http_session"]
    for path in WORKSPACE_READS:
        body = http_error(client.get(path), "session_expired")
        assert body["details"]["session_id"] == client.session["id"]
        assert body["details"]["expires_at"] == client.session["expires_at"]


def test_session_expired_ce(lapsed):
    ce_error(ce_call(lapsed["ce_session_file"], "GET", "/workspace/document"), "session_expired")


def test_invitation_expired_http(shared_room, lapsed):
    body = http_error(join_http(shared_room, lapsed["http_invitation"]), "invitation_expired")
    assert body["details"]["expires_at"] == invitation.decode(lapsed["http_invitation"])["expires_at"]


def test_invitation_expired_ce(lapsed, tmp_path):
    ce_error(ce("join", lapsed["ce_invitation"], "--session-file", str(tmp_path / "s.json"), "--json"),
             "invitation_expired")
    assert not (tmp_path / "s.json").exists()


def test_expired_sessions_are_not_counted_live(shared_room, lapsed):
    pages = shared_room.operator().get("/workspace/participants?limit=200").json()["participants"]
    by_name = {p["name"]: p for p in pages}
    assert by_name["ttl-http"]["sessions"] == 0
    assert by_name["ttl-ce"]["sessions"] == 0


# ------------------------------------------------------- permission_denied


@pytest.mark.parametrize("path", ["/workspace/document", "/workspace/room", "/workspace/participants"])
def test_permission_denied_http(shared_room, path):
    watcher = shared_room.join("watcher", "observe")
    body = http_error(watcher.get(path), "permission_denied")
    assert body["details"]["required"] == "read"
    assert body["details"]["granted"] == ["observe"]


def test_permission_denied_ce(ce_sessions):
    body = ce_error(ce_call(ce_sessions["watcher"], "GET", "/workspace/document"), "permission_denied")
    assert body["details"]["required"] == "read"
    assert body["details"]["granted"] == ["observe"]


def test_own_session_needs_no_capability(shared_room):
    watcher = shared_room.join("watcher-self", "observe")
    r = watcher.get("/workspace/session")
    assert r.status_code == 200 and r.json()["capabilities"] == ["observe"]


# ------------------------------------------------- invitation_revoked/redeemed


def test_invitation_revoked_by_token_http(shared_room):
    token = shared_room.invite("revoked-http", "read")
    r = owner_post(shared_room, "/owner/revoke", {"invitation": token})
    assert r.status_code == 200 and r.json()["revoked"] is True and r.json()["kind"] == "invitation"
    body = http_error(join_http(shared_room, token), "invitation_revoked")
    assert body["details"]["invitation_id"] == r.json()["id"]


def test_invitation_revoked_by_id_http(shared_room):
    made = invite_http(shared_room, "revoked-id-http", ["read"])
    r = owner_post(shared_room, "/owner/revoke", {"invitation": made["invitation_id"]})
    assert r.json() == {"revoked": True, "kind": "invitation", "id": made["invitation_id"]}
    http_error(join_http(shared_room, made["token"]), "invitation_revoked")


def test_invitation_revoked_ce(shared_room, tmp_path):
    token = shared_room.invite("revoked-ce", "read")
    assert ce_ok(ce("revoke", str(shared_room.document), "--invitation", token, "--json"))["revoked"] is True
    ce_error(ce("join", token, "--session-file", str(tmp_path / "s.json"), "--json"), "invitation_revoked")


def test_invitation_redeemed_http(shared_room):
    token = shared_room.invite("once-http", "read")
    first = join_http(shared_room, token)
    assert first.status_code == 201
    body = http_error(join_http(shared_room, token), "invitation_redeemed")
    assert body["details"]["invitation_id"]
    bearer = first.json()["token"]
    again = httpx.get(shared_room.ingress + "/workspace/document",
                      headers={"Authorization": f"Bearer {bearer}"}, timeout=30)
    assert again.status_code == 200, "the first session is unaffected"


def test_invitation_redeemed_ce(shared_room, tmp_path):
    token = shared_room.invite("once-ce", "read")
    ce_join(token, tmp_path / "first.json")
    ce_error(ce("join", token, "--session-file", str(tmp_path / "second.json"), "--json"), "invitation_redeemed")
    assert not (tmp_path / "second.json").exists()


def test_three_invitation_codes_are_distinct(shared_room):
    codes = {"invitation_expired", "invitation_revoked", "invitation_redeemed"}
    assert {STATUS[c] for c in codes} == {403}
    assert len({EXIT_CODES[c] for c in codes}) == 3


def test_invitation_of_another_workspace_is_refused(shared_room):
    token = recode(shared_room.invite("elsewhere", "read"), workspace_id="w_another")
    body = http_error(join_http(shared_room, token), "unauthorized")
    assert body["details"]["reason"] == "workspace_mismatch"


def test_forged_secret_is_refused(shared_room):
    token = recode(shared_room.invite("forged", "read"), secret="cri_" + "F" * 43)
    assert http_error(join_http(shared_room, token), "unauthorized")["details"]["reason"] == "unknown_invitation"


# ----------------------------------------------------- unsupported_version


@pytest.fixture
def version_two(shared_room) -> str:
    return recode(shared_room.invite("future", "read"), version="2")


def test_unsupported_version_decode_ce(version_two):
    body = ce_error(ce("invitation", "decode", version_two, "--json"), "unsupported_version")
    assert body["details"]["supported"] == ["1"]


def test_unsupported_version_join_ce(version_two, tmp_path):
    ce_error(ce("join", version_two, "--session-file", str(tmp_path / "s.json"), "--json"), "unsupported_version")


@pytest.mark.parametrize("version", ["2", 2, "1.1"])
def test_unsupported_version_join_http(shared_room, version):
    token = recode(shared_room.invite(f"future-{version}", "read"), version=version)
    http_error(join_http(shared_room, token), "unsupported_version")


def test_numeric_version_one_joins(shared_room):
    token = recode(shared_room.invite("numeric", "read"), version=1)
    assert invitation.decode(token)["version"] == "1"
    r = join_http(shared_room, token)
    assert r.status_code == 201, r.text


def test_decode_ce_masks_the_secret(shared_room):
    token = shared_room.invite("decoded", "read,observe")
    secret = invitation.decode(token)["secret"]
    shown = ce_ok(ce("invitation", "decode", token, "--json"))
    assert secret not in json.dumps(shown)
    assert shown["capabilities"] == ["read", "observe"]
    assert shown["version"] == "1" and shown["protocol"] == "commonroom"


# --------------------------------------------------------- invalid_request


@pytest.mark.parametrize("token", ["garbage", "commonroom://join/", "commonroom://join/%%%%",
                                   "commonroom://join/" + base64.urlsafe_b64encode(b"[]").decode()])
def test_broken_token_http(shared_room, token):
    http_error(join_http(shared_room, token), "invalid_request")


def test_broken_token_ce(tmp_path):
    runs = ce_parallel({(command, token): (*command.split(), token, *(("--session-file", str(tmp_path / "s.json"))
                                                                       if command == "join" else ()))
                        for command in ("invitation decode", "join")
                        for token in ("garbage", "commonroom://join/%%%%")})
    for done in runs.values():
        ce_error(done, "invalid_request")


@pytest.mark.parametrize("raw", [b"{bad", b"\xff\xfe", b"[1,", b'{"invitation": "x"'])
def test_bad_json_body_http(shared_room, raw):
    r = httpx.post(shared_room.ingress + "/workspace/join", content=raw,
                   headers={"Content-Type": "application/json"}, timeout=30)
    assert http_error(r, "invalid_request")["details"]["pointer"] == ""


def test_bad_json_body_owner_http(shared_room):
    r = httpx.post(shared_room.owner + "/owner/invitations", content=b"{bad",
                   headers={"Authorization": f"Bearer {shared_room.owner_token}"}, timeout=30)
    http_error(r, "invalid_request")


def test_bad_json_data_ce(ce_sessions):
    ce_error(ce_call(ce_sessions["reader"], "POST", "/workspace/join", "--data", "{bad"), "invalid_request")


@pytest.mark.parametrize(
    "path, body, pointer",
    [
        ("/workspace/join", {"invitation": 5}, "/invitation"),
        ("/workspace/join", {}, ""),
        ("/workspace/join", {"invitation": "x", "client": ["ce"]}, "/client"),
        ("/workspace/join", [], ""),
    ],
)
def test_schema_failure_names_the_pointer_http(shared_room, path, body, pointer):
    r = httpx.post(shared_room.ingress + path, json=body, timeout=30)
    details = http_error(r, "invalid_request")["details"]
    assert details["pointer"] == pointer
    assert details["schema_path"].startswith("/")


@pytest.mark.parametrize(
    "body, pointer",
    [
        ({"participant": "x", "capabilities": ["read", "fly"]}, "/capabilities/1"),
        ({"participant": "", "capabilities": ["read"]}, "/participant"),
        ({"participant": "x", "capabilities": ["read"], "expires_in_seconds": 0}, "/expires_in_seconds"),
        ({"participant": "x", "capabilities": ["read"], "session_ttl_seconds": "1s"}, "/session_ttl_seconds"),
        ({"participant": "x", "capabilities": ["read"], "transport": "Carrier Pigeon"}, "/transport"),
        ({"participant": "x", "capabilities": ["read"], "extra": True}, ""),
    ],
)
def test_schema_failure_names_the_pointer_owner_http(shared_room, body, pointer):
    details = http_error(owner_post(shared_room, "/owner/invitations", body), "invalid_request")["details"]
    assert details["pointer"] == pointer


def test_schema_failure_names_the_pointer_ce(ce_sessions):
    body = ce_error(ce_call(ce_sessions["reader"], "POST", "/workspace/join", "--data", '{"invitation": 5}'),
                    "invalid_request")
    assert body["details"]["pointer"] == "/invitation"


@pytest.mark.parametrize("limit", ["0", "201", "abc", "", "-1", "1.5", "1e2"])
def test_bad_limit_http(shared_room, limit):
    reader = shared_room.join(f"limit-{limit or 'empty'}", "read")
    body = http_error(reader.get("/workspace/participants", params={"limit": limit}), "invalid_request")
    assert body["details"]["parameter"] == "limit"


def test_bad_limit_ce(ce_sessions):
    reader = str(ce_sessions["reader"])
    runs = ce_parallel({limit: ("call", "GET", f"/workspace/participants?limit={limit}", "--session-file", reader)
                        for limit in ("0", "201", "abc")})
    for done in runs.values():
        assert ce_error(done, "invalid_request")["details"]["parameter"] == "limit"
    assert ce_call(ce_sessions["reader"], "GET", "/workspace/participants?limit=1").returncode == 0


@pytest.mark.parametrize("limit", ["1", "200"])
def test_limit_bounds_are_accepted(shared_room, limit):
    reader = shared_room.join(f"bounds-{limit}", "read")
    assert reader.get("/workspace/participants", params={"limit": limit}).status_code == 200


def test_bad_durations_ce(shared_room):
    doc = str(shared_room.document)
    runs = ce_parallel({(option, value): ("invite", doc, "--participant", "x", option, value)
                        for option in ("--expires", "--session-ttl") for value in ("soon", "0s")})
    for (option, _), done in runs.items():
        assert ce_error(done, "invalid_request")["details"]["option"] == option


def test_unknown_capability_ce(shared_room):
    done = ce("invite", str(shared_room.document), "--participant", "x", "--cap", "read,fly", "--json")
    assert ce_error(done, "invalid_request")["details"]["pointer"] == "/capabilities/1"


def test_no_session_file_ce(tmp_path):
    ce_error(ce_call(tmp_path / "missing.json", "GET", "/workspace/room"), "invalid_request")


def test_oversized_body_http(shared_room):
    """limit_exceeded is 413 for a body over the cap, by Content-Length or while streaming."""
    big = b'{"invitation": "' + b"a" * (9 * 1024 * 1024) + b'"}'

    def chunked():
        yield big[:1024]
        for start in range(1024, len(big), 256 * 1024):
            yield big[start:start + 256 * 1024]

    for content in (big, chunked()):
        r = httpx.post(shared_room.ingress + "/workspace/join", content=content, timeout=60)
        body = http_error(r, "limit_exceeded", status=413)
        assert body["details"]["limit_bytes"] == MAX_BODY_BYTES


# --------------------------------------------------- transport_unavailable


def test_join_where_nothing_listens_ce(shared_room, tmp_path):
    good = shared_room.invite("unreachable", "read")
    port = free_port()
    token = recode(good, transport={**invitation.decode(good)["transport"], "port": port})
    body = ce_error(ce("join", token, "--session-file", str(tmp_path / "s.json"), "--json"), "transport_unavailable")
    assert body["details"]["port"] == port
    assert f"127.0.0.1:{port}" in body["message"]
    assert not (tmp_path / "s.json").exists()
    ce_join(good, tmp_path / "s.json")  # the invitation itself was never used


def test_tailcat_transport(shared_room):
    """The plugin is installed (this project's entry point) but this room was not served with --transport tailcat."""
    assert any(ep.name == "tailcat" for ep in entry_points(group="commonroom.transports"))
    body = http_error(owner_post(shared_room, "/owner/invitations",
                                 {"participant": "t", "capabilities": ["read"], "transport": "tailcat"}),
                      "transport_unavailable")
    assert body["details"]["transport"] == "tailcat"
    assert "ce serve FILE --transport tailcat" in body["message"]
    done = ce("invite", str(shared_room.document), "--participant", "t", "--transport", "tailcat", "--json")
    assert ce_error(done, "transport_unavailable")["details"]["transport"] == "tailcat"


def test_a_third_party_transport_type_passes_the_schema(shared_room):
    """A plugin's own type is valid input (the schema's type is open): with no such plugin installed the
    answer is transport_unavailable naming the installed ones, not invalid_request."""
    body = http_error(owner_post(shared_room, "/owner/invitations",
                                 {"participant": "c", "capabilities": ["read"], "transport": "carrier-pigeon"}),
                      "transport_unavailable")
    assert body["details"]["transport"] == "carrier-pigeon"
    assert "tailcat" in body["details"]["installed"]


def test_local_transport_without_a_socket(shared_room):
    body = http_error(owner_post(shared_room, "/owner/invitations",
                                 {"participant": "l", "capabilities": ["read"], "transport": "local"}),
                      "transport_unavailable")
    assert body["details"]["transport"] == "local"


# ---------------------------------------------------------------- not_found


@pytest.mark.parametrize("method", ["GET", "POST", "DELETE"])
@pytest.mark.parametrize("path", ["/nope", "/workspace/nope", "/owner/invitations"])
def test_unknown_route_ingress_http(shared_room, method, path):
    for headers in ({}, {"Authorization": "Bearer crs_whatever"}):
        r = httpx.request(method, shared_room.ingress + path, headers=headers, timeout=30)
        assert http_error(r, "not_found")["details"]["path"] == path


def test_unknown_route_owner_http(shared_room):
    operator = shared_room.operator()
    assert http_error(operator.get("/nope"), "not_found")["details"]["path"] == "/nope"
    http_error(httpx.get(shared_room.owner + "/nope", timeout=30), "not_found")


def test_unknown_route_ce(ce_sessions):
    body = ce_error(ce_call(ce_sessions["reader"], "GET", "/nope"), "not_found")
    assert body["details"]["path"] == "/nope"


# ------------------------------------------------------ one status per code


def test_distinct_codes_give_distinct_exit_statuses(shared_room, ce_sessions, tmp_path):
    """Seven codes through the real ``ce`` at once: seven different exit statuses."""
    used = shared_room.invite("distinct-used", "read")
    assert join_http(shared_room, used).status_code == 201
    fake_file = tmp_path / "fake.json"
    fake_file.write_text(json.dumps({**json.loads(ce_sessions["reader"].read_text()), "token": "crs_" + "C" * 43}))
    dead = recode(used, transport={**invitation.decode(used)["transport"], "port": free_port()})
    runs = ce_parallel({
        "unauthorized": ("call", "GET", "/workspace/room", "--session-file", str(fake_file)),
        "permission_denied": ("call", "GET", "/workspace/document", "--session-file", str(ce_sessions["watcher"])),
        "invitation_redeemed": ("join", used, "--session-file", str(tmp_path / "again.json")),
        "unsupported_version": ("invitation", "decode", recode(used, version="2")),
        "invalid_request": ("invitation", "decode", "garbage"),
        "not_found": ("call", "GET", "/nope", "--session-file", str(ce_sessions["reader"])),
        "transport_unavailable": ("join", dead, "--session-file", str(tmp_path / "x.json")),
    })
    statuses = {}
    for code, done in runs.items():
        ce_error(done, code)
        statuses[code] = done.returncode
    assert len(set(statuses.values())) == len(statuses), statuses
    assert not {0, 1, 2} & set(statuses.values())
