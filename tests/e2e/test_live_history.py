"""GET /workspace/history: paging the ring by cursor, limit bounds, errors, the cursor observe shares."""

from __future__ import annotations

import httpx
import pytest

from commonroom import schemas
from commonroom.engine.base import encode_cursor
from tests.ssekit import open_stream


@pytest.fixture(scope="module")
def filled(shared_room):
    with httpx.Client(base_url=shared_room.owner, timeout=30,
                      headers={"Authorization": f"Bearer {shared_room.owner_token}"}) as owner:
        for i in range(7):
            assert owner.post("/owner/invitations", json={"participant": f"h{i}", "capabilities": ["read"]}).status_code == 201
    return shared_room


def test_pages_oldest_first_until_next_cursor_is_null(filled):
    reader = filled.join("pager", "read")
    last = filled.operator().get("/workspace/room").json()["last_event_id"]
    seen: list[int] = []
    cursor = None
    pages = 0
    while True:
        params = {"limit": 3, **({"cursor": cursor} if cursor else {})}
        r = reader.get("/workspace/history", params=params)
        assert r.status_code == 200, r.text
        page = r.json()
        assert schemas.errors_of("events#HistoryPage", page) == []
        assert len(page["events"]) <= 3
        assert page["history_lost"] is False and page["oldest_event_id"] == 1
        seen += [e["id"] for e in page["events"]]
        pages += 1
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert seen[: last] == list(range(1, last + 1))
    assert pages >= 3
    for event in filled.operator().get("/workspace/history", params={"limit": 200}).json()["events"]:
        assert schemas.errors_of("events#Event", event) == [], event


def test_default_limit_and_the_same_events_as_the_operator(filled):
    reader = filled.join("pager2", "read")
    mine = reader.get("/workspace/history").json()
    theirs = filled.operator().get("/workspace/history").json()
    assert len(mine["events"]) <= 50
    assert [e["id"] for e in mine["events"]][:10] == [e["id"] for e in theirs["events"]][:10]


@pytest.mark.parametrize("limit", ["0", "201", "-1", "abc", "1.5", ""])
def test_limit_outside_1_to_200_is_invalid_request(filled, limit):
    r = filled.operator().get("/workspace/history", params={"limit": limit})
    assert r.status_code == 400
    body = r.json()
    assert body["error"] == "invalid_request" and body["details"]["parameter"] == "limit"


@pytest.mark.parametrize("limit", ["1", "200"])
def test_limit_bounds_are_inclusive(filled, limit):
    r = filled.operator().get("/workspace/history", params={"limit": limit})
    assert r.status_code == 200 and len(r.json()["events"]) <= int(limit)


def test_broken_cursor_is_invalid_request(filled):
    for cursor in ("!!", "bm90LWpzb24", "WzEsMl0"):
        r = filled.operator().get("/workspace/history", params={"cursor": cursor})
        assert r.status_code == 400 and r.json()["details"]["parameter"] == "cursor", cursor


def test_history_needs_read(filled):
    observer = filled.join("observer-only", "observe")
    r = observer.get("/workspace/history")
    assert r.status_code == 403 and r.json()["error"] == "permission_denied"


def test_one_cursor_form_for_history_and_observe(filled):
    reader = filled.join("one-cursor", "read,observe")
    page = reader.get("/workspace/history", params={"limit": 2}).json()
    cursor = page["next_cursor"]
    assert cursor == str(page["events"][-1]["id"])
    following = reader.get("/workspace/history", params={"limit": 3, "cursor": cursor}).json()
    expected = [e["id"] for e in following["events"]]
    assert expected and expected[0] > int(cursor)
    for how in ({"path": f"/workspace/observe?since_event_id={cursor}"},
                {"headers": {"Last-Event-ID": cursor}}):
        stream = open_stream(("127.0.0.1", filled.state["ingress"]["port"]), token=reader.token, **how)
        try:
            assert stream.status == 200
            assert [int(f.id) for f in stream.events(len(expected))] == expected
        finally:
            stream.close()


def test_a_cursor_of_the_old_opaque_form_is_still_followed(filled):
    reader = filled.join("old-cursor", "read")
    page = reader.get("/workspace/history", params={"limit": 2, "cursor": encode_cursor({"after": 3})}).json()
    assert [e["id"] for e in page["events"]] == [4, 5] and page["next_cursor"] == "5"
    r = reader.get("/workspace/history", params={"limit": 1, "cursor": "0"})
    assert r.status_code == 200 and r.json()["events"][0]["id"] == 1
    for cursor in (" 3 ", "", "\u0663"):  # ASCII digits only, never blank
        r = reader.get("/workspace/history", params={"limit": 1, "cursor": cursor})
        assert r.status_code == 400 and r.json()["details"]["parameter"] == "cursor", cursor
