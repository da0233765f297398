"""GET /workspace/history: paging the ring by cursor, limit bounds, errors."""

from __future__ import annotations

import httpx
import pytest

from commonroom import schemas


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
