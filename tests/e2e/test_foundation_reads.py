"""Reads of the room foundation against a real room: status, document, session,
participants (paged), timestamps, and the owner port.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re

import httpx
import pytest

from commonroom import invitation, schemas
from commonroom.errors import STATUS
from commonroom.protocol import MCP_VERSION
from tests.conftest import SAMPLE
from tests.roomproc import Room, ce, start_room

RFC3339 = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}\+00:00$")
NAMES = ["ana", "ben", "cho", "dev", "eli"]


@pytest.fixture(scope="module")
def people_room(tmp_path_factory):
    """A room whose participants are exactly :data:`NAMES` (the module's other tests join elsewhere)."""
    r = start_room(tmp_path_factory.mktemp("people"), SAMPLE)
    yield r
    r.stop()


@pytest.fixture(scope="module")
def people(people_room: Room):
    """Five participants joined in order; ``ana`` holds two sessions. Nobody else joins their room."""
    clients = {name: people_room.join(name, "read,observe") for name in NAMES}
    clients["ana-2"] = people_room.join("ana", "read")
    return clients


def envelope(response: httpx.Response, code: str) -> dict:
    assert response.status_code == STATUS[code], response.text
    body = response.json()
    assert list(body) == ["error", "message", "details"] and body["error"] == code
    assert schemas.errors_of("error", body) == []
    return body


def walk(client, limit: int) -> tuple[list[dict], int]:
    """Every participant, following next_cursor; returns (rows, pages)."""
    rows, pages, cursor = [], 0, None
    while True:
        params = {"limit": str(limit), **({"cursor": cursor} if cursor else {})}
        r = client.get("/workspace/participants", params=params)
        assert r.status_code == 200, r.text
        page = r.json()
        assert schemas.errors_of("room#ParticipantsPage", page) == []
        assert len(page["participants"]) <= limit
        rows += page["participants"]
        pages += 1
        cursor = page["next_cursor"]
        if cursor is None:
            return rows, pages
        assert pages < 100, "the cursor must advance"


# ------------------------------------------------------------- pagination


def test_limit_one_walks_every_page(people):
    rows, pages = walk(people["eli"], 1)
    assert [r["name"] for r in rows] == NAMES
    assert pages == len(NAMES)
    assert len({r["id"] for r in rows}) == len(NAMES)


@pytest.mark.parametrize("limit", [2, 3, 200])
def test_other_page_sizes_agree(people, limit):
    rows, pages = walk(people["ben"], limit)
    assert [r["name"] for r in rows] == NAMES
    assert pages == -(-len(NAMES) // limit)


def test_default_page_holds_everyone_here(people):
    page = people["cho"].get("/workspace/participants").json()
    assert [p["name"] for p in page["participants"]] == NAMES
    assert page["next_cursor"] is None


def test_live_session_counts(people):
    rows, _ = walk(people["dev"], 200)
    counts = {r["name"]: r["sessions"] for r in rows}
    assert counts == {"ana": 2, "ben": 1, "cho": 1, "dev": 1, "eli": 1}


def test_cursor_is_stable_across_new_joins(room):
    names = NAMES[:3]
    clients = [room.join(name, "read") for name in names]
    first = clients[0].get("/workspace/participants", params={"limit": "2"}).json()
    room.join("zed-late", "read")
    rest, _ = walk_from(clients[0], first["next_cursor"])
    assert [p["name"] for p in first["participants"] + rest] == names + ["zed-late"]


def walk_from(client, cursor):
    rows, pages = [], 0
    while cursor:
        page = client.get("/workspace/participants", params={"limit": "2", "cursor": cursor}).json()
        rows += page["participants"]
        cursor = page["next_cursor"]
        pages += 1
    return rows, pages


def _b64(value) -> str:
    return base64.urlsafe_b64encode(json.dumps(value).encode()).rstrip(b"=").decode()


@pytest.mark.parametrize("cursor", ["garbage!", "%%%", "eyJh", _b64({"a": 1}), _b64([1, 2]), _b64([None, None]),
                                    _b64(["x"]), _b64("text")])
def test_garbage_cursor_is_invalid_request(people, cursor):
    body = envelope(people["ben"].get("/workspace/participants", params={"cursor": cursor}), "invalid_request")
    assert body["details"]["parameter"] == "cursor"


def test_paging_through_ce(room, tmp_path):
    for name in NAMES[:2]:
        room.join(name, "read")
    session_file = tmp_path / "s.json"
    done = ce("join", room.invite("pager", "read"), "--session-file", str(session_file))
    assert done.returncode == 0, done.stderr
    done = ce("call", "GET", "/workspace/participants?limit=1", "--session-file", str(session_file))
    assert done.returncode == 0, done.stderr
    page = json.loads(done.stdout)
    assert [p["name"] for p in page["participants"]] == ["ana"] and page["next_cursor"]
    done = ce("call", "GET", f"/workspace/participants?limit=1&cursor={page['next_cursor']}",
              "--session-file", str(session_file))
    assert json.loads(done.stdout)["participants"][0]["name"] == "ben"


# ------------------------------------------------------------- timestamps


def test_timestamps_in_join_result(shared_room):
    token = shared_room.invite("stamps", "read")
    assert RFC3339.match(invitation.decode(token)["expires_at"])
    r = httpx.post(shared_room.ingress + "/workspace/join", json={"invitation": token}, timeout=30)
    result = r.json()
    assert schemas.errors_of("join#JoinResult", result) == []
    session = result["session"]
    for stamp in (session["created_at"], session["expires_at"], session["participant"]["created_at"]):
        assert RFC3339.match(stamp), stamp
    assert session["revoked_at"] is None


def test_timestamps_in_session_and_participants(people):
    session = people["ana"].get("/workspace/session").json()
    assert schemas.errors_of("common#Session", session) == []
    assert RFC3339.match(session["created_at"]) and RFC3339.match(session["expires_at"])
    assert RFC3339.match(session["participant"]["created_at"])
    rows, _ = walk(people["ana"], 200)
    assert rows and all(RFC3339.match(r["created_at"]) for r in rows)


def test_timestamps_in_invite_result(shared_room):
    r = shared_room.operator().post("/owner/invitations", {"participant": "inv-stamp", "capabilities": ["read"]})
    assert r.status_code == 201
    assert schemas.errors_of("owner#InviteResult", r.json()) == []
    assert RFC3339.match(r.json()["expires_at"])


def test_timestamp_in_state_file(shared_room):
    state = json.loads(shared_room.document.with_name(shared_room.document.name + ".commonroom.json").read_text())
    assert RFC3339.match(state["started_at"])


# ------------------------------------------------------ status and document


def test_room_status(people, people_room):
    status = people["eli"].get("/workspace/room").json()
    assert schemas.errors_of("room#RoomStatus", status) == []
    assert status["protocol"] == "commonroom" and status["version"] == "1"
    assert status["file_name"] == people_room.document.name
    assert status["workspace_id"] == people_room.state["workspace_id"]
    assert status["head_version"] >= 1
    rows, _ = walk(people["eli"], 200)
    assert status["participants"] == len(rows)
    assert status["sessions"] == sum(r["sessions"] for r in rows)
    assert status["last_event_id"] > 0


def test_last_event_id_moves_on_a_join(shared_room):
    reader = shared_room.join("mover-reader", "read")
    before = reader.get("/workspace/room").json()
    shared_room.join("mover", "read")
    after = reader.get("/workspace/room").json()
    assert after["last_event_id"] > before["last_event_id"]
    assert after["participants"] == before["participants"] + 1
    assert after["sessions"] == before["sessions"] + 1


def test_document(people, people_room):
    body = people["ana"].get("/workspace/document").json()
    assert schemas.errors_of("room#Document", body) == []
    data = people_room.document.read_bytes()
    assert body["text"].encode("utf-8") == data
    assert body["content_hash"] == "sha256:" + hashlib.sha256(data).hexdigest()


def test_session_is_the_callers_own(people):
    mine = people["ana"].get("/workspace/session").json()
    other = people["ana-2"].get("/workspace/session").json()
    assert mine["id"] == people["ana"].session["id"] and other["id"] == people["ana-2"].session["id"]
    assert mine["participant"]["id"] == other["participant"]["id"]
    assert other["capabilities"] == ["read"]
    assert "token" not in json.dumps(mine)


# --------------------------------------------------------------- owner port


@pytest.mark.parametrize("path", ["/workspace/room", "/workspace/document", "/workspace/participants",
                                  "/owner/invitations", "/owner/revoke"])
def test_owner_port_refuses_missing_or_wrong_token(people_room, people, path):
    method = "POST" if path.startswith("/owner/") else "GET"
    for headers in ({}, {"Authorization": "Bearer cro_" + "W" * 43},
                    {"Authorization": f"Bearer {people['ana'].token}"},  # a session of this room
                    {"Authorization": f"Basic {people_room.owner_token}"}):
        r = httpx.request(method, people_room.owner + path, headers=headers, json={}, timeout=30)
        envelope(r, "unauthorized")


def test_owner_port_serves_the_workspace_as_the_operator(people_room, people):
    operator = people_room.operator()
    assert operator.get("/workspace/room").json()["workspace_id"] == people_room.state["workspace_id"]
    assert operator.get("/workspace/document").json()["text"].encode() == people_room.document.read_bytes()
    rows, _ = walk(operator, 2)
    assert [r["name"] for r in rows] == NAMES


@pytest.mark.parametrize("method", ["GET", "POST", "DELETE"])
def test_no_mcp_on_the_owner_port(shared_room, method):
    for headers in ({}, {"Authorization": f"Bearer {shared_room.owner_token}"}):
        r = httpx.request(method, shared_room.owner + "/mcp",
                          headers={**headers, "Accept": "application/json, text/event-stream",
                                   "MCP-Protocol-Version": MCP_VERSION},
                          json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, timeout=30)
        body = envelope(r, "not_found")
        assert body["details"]["path"] == "/mcp"


def test_owner_port_listens_on_loopback_only(shared_room):
    assert shared_room.state["owner_url"].startswith("http://127.0.0.1:")
