"""The room console in a real headless Chromium against a real room, through ``ce console``'s URL.

Debian's ``chromium`` (installed by :func:`tests.chromium.ensure_chromium`
when missing), driven by Playwright for Python (the ``test`` extra; it
never downloads a browser). Screenshots of every step are saved under the
test's tmp dir and copied to ``/tmp/commonroom-console-artifacts/``; their
paths are printed.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from playwright.sync_api import expect

from tests.mcp_wire import Mcp
from tests.roomproc import ce

ARTIFACTS = Path("/tmp/commonroom-console-artifacts")
HOSTILE = "<script>window.__pwned=1</script><img src=x onerror=\"window.__pwned=2\"> "


class Shots:
    """Numbered screenshots of one test, copied to :data:`ARTIFACTS`."""

    def __init__(self, page, folder: Path):
        self.page, self.folder, self.n = page, folder, 0
        folder.mkdir(parents=True, exist_ok=True)
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        for old in ARTIFACTS.glob("*.png"):  # only this run's screenshots there
            old.unlink()

    def __call__(self, name: str, full_page: bool = True) -> Path:
        self.n += 1
        path = self.folder / f"{self.n:02d}-{name}.png"
        self.page.screenshot(path=str(path), full_page=full_page)
        stable = ARTIFACTS / path.name
        shutil.copyfile(path, stable)
        print(f"screenshot: {stable} (also {path})")
        return stable


def tool(mcp: Mcp, name: str, **arguments):
    """A tool's structured answer (asserting it is not an error)."""
    result = mcp.call_tool(name, arguments)
    assert not result["isError"], result
    return result["structuredContent"]


def assert_not_injected(page, scope: str) -> None:
    """Nothing from the room became markup: no element, no script run, no dialog."""
    assert page.evaluate("window.__pwned === undefined")
    assert page.locator(f"{scope} img, {scope} script").count() == 0


def test_the_console_follows_a_real_room(room, chromium, tmp_path):
    alice = room.join("alice", "read,observe,message,propose,lease,handoff")
    bob = room.join("bob", "read,observe,message,handoff")
    sid = alice.session["id"]
    mcp = Mcp(room.ingress, alice.token)
    # something in every panel: a lease, a handoff, a note on bob's board
    assert alice.post("/workspace/leases", {"region": {"heading": ["Release plan", "Goals"]}}).status_code == 201
    created = alice.post("/workspace/handoffs", {"summary": "Review the Goals section", "assignee": "bob"})
    assert created.status_code == 201
    handoff_id = created.json()["handoff"]["id"]
    tool(Mcp(room.ingress, bob.token), "post_session_message", session_id=bob.session["id"], kind="note",
         body="Picking up the review after lunch.")
    tool(mcp, "post_session_message", session_id=sid, kind="progress", body="Reading the sample; first pass done.")
    url = ce("console", str(room.document)).stdout.strip()
    assert "/console/login?code=" in url

    page = chromium.new_page(viewport={"width": 1280, "height": 800})
    dialogs: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    shot = Shots(page, tmp_path / "screenshots")
    room2 = None
    try:
        # 1. login through ce console's URL: a clean URL after, every panel filled
        page.goto(url)
        assert page.url == room.owner + "/console"
        page.wait_for_selector("#live.good")
        expect(page.locator("#head")).to_have_text("v1")
        page.wait_for_selector("#sessions li >> text=alice")
        assert "sample" in page.locator("#document").inner_text().lower() or page.locator("#document").inner_text()
        page.wait_for_selector("#handoffs li >> text=Review the Goals section")
        # the handoff's task status: working; once bob asks alice for input, input required, without a reload
        handoff_task = page.locator(f"#handoffs li[data-id='{handoff_id}'] .badge.task")
        expect(handoff_task).to_have_text("working")
        assert bob.post(f"/workspace/handoffs/{handoff_id}/accept", {}).status_code == 200
        asked = bob.post(f"/workspace/handoffs/{handoff_id}/request-input", {"message": "Which goal first?"})
        assert asked.status_code == 200, asked.text
        expect(handoff_task).to_have_text("input required")
        expect(page.locator(f"#handoffs li[data-id='{handoff_id}'] .badge.accepted")).to_have_text("accepted")
        page.wait_for_selector("#leases li >> text=alice")
        shot("overview")
        shot("overview-1280x800", full_page=False)

        # 2. choose alice's session through the search box: its board loads (baseline, then snapshot)
        page.fill("#session-search", "alice")
        page.click(f"#session-list [data-sid='{sid}']")
        page.wait_for_selector("#board-state.good")
        page.wait_for_selector("#board li.msg >> text=first pass done")
        # 3. a message posted over MCP appears without a reload; it renders as text
        posted = tool(mcp, "post_session_message", session_id=sid, kind="question",
                      body=HOSTILE + "which heading first?")
        item = page.locator(f"#board li[data-id='{posted['message_id']}']")
        item.wait_for()
        assert "<script>" in item.inner_text() and "onerror" in item.inner_text()
        assert_not_injected(page, "#board")
        shot("board-live-message")

        # 4. the composer posts a todo; MCP reads it back (the operator is the author; no author session)
        page.select_option("#compose-kind", "todo")
        page.fill("#compose-body", "Please summarise section 2 in three bullets.")
        page.click("#compose-send")
        page.wait_for_selector("#compose-state >> text=posted todo")
        page.wait_for_selector("#board li.kind-todo >> text=three bullets")
        todos = tool(mcp, "list_session_messages", session_id=sid, kind="todo")["messages"]
        assert [m["body"] for m in todos] == ["Please summarise section 2 in three bullets."]
        assert todos[0]["author"]["name"] == "operator" and todos[0]["author_session_id"] is None
        shot("board-composer-todo")

        # 5. a proposal with markup renders as text; approving it commits v2, seen without a reload
        head = alice.get("/workspace/document").json()
        lines = head["text"].split("\n")
        proposal = alice.post("/workspace/proposals", {
            "base_version": head["version"], "region": {"lines": [1, 1]},
            "text": lines[0] + " " + HOSTILE.strip() + "\n", "summary": "title <img src=x onerror=alert(1)>"}).json()
        card = page.locator(".card.status-open", has_text="title <img")
        card.wait_for()
        assert_not_injected(page, "#proposals")
        shot("proposal-open")
        card.get_by_role("button", name="Approve").click()
        expect(page.locator("#head")).to_have_text("v2")
        assert alice.get("/workspace/room").json()["head_version"] == 2
        assert alice.get(f"/workspace/proposals/{proposal['id']}").json()["status"] == "approved"
        page.wait_for_selector("#versions >> text=v2")
        assert "<script>" in page.locator("#document").inner_text()
        assert_not_injected(page, "#document")
        shot("proposal-approved")

        # 6. the room restarts: while it is down Refresh fails and keeps the data; then the event
        #    stream and the board loop reconnect by themselves
        def while_down() -> None:  # Refresh fails visibly and keeps the last good data; the loops show their retry
            page.click("#refresh")
            page.wait_for_selector("#refresh-state.bad >> text=refresh failed")
            assert "<script>" in page.locator("#document").inner_text()
            page.wait_for_selector("#board-state.bad >> text=reconnecting")
            page.wait_for_selector("#board li.kind-todo >> text=three bullets")
            shot("room-down")

        room2 = room.restart(between=while_down)
        page.wait_for_selector("#live.good", timeout=60_000)
        page.wait_for_selector("#board-state.good", timeout=60_000)
        again = tool(Mcp(room2.ingress, alice.token), "post_session_message", session_id=sid, kind="note",
                     body="after the restart")
        page.locator(f"#board li[data-id='{again['message_id']}']").wait_for(timeout=60_000)
        shot("after-restart")

        # 7. Refresh says what it did and keeps the live loop
        page.click("#refresh")
        page.wait_for_selector("#refresh-state.good >> text=refreshed")
        assert page.locator("#board-state").get_attribute("class") == "pill good"

        # 8. a narrow window still reads
        page.set_viewport_size({"width": 420, "height": 900})
        page.wait_for_timeout(200)
        shot("narrow")
        assert dialogs == []
    finally:
        page.close()
        if room2 is not None:
            room2.stop()


def test_the_board_panel_shows_both_summaries(room, chromium, tmp_path):
    """Choosing a session shows session_discussion_summary and session_handoff_summary, as text, kept current."""
    coordinator = room.join("coordinator", "read,observe,message")
    worker = room.join("worker", "read,observe,message,lease")
    c_id, w_id = coordinator.session["id"], worker.session["id"]
    c_mcp, w_mcp = Mcp(room.ingress, coordinator.token), Mcp(room.ingress, worker.token)
    todo = tool(c_mcp, "post_session_message", session_id=c_id, kind="todo", priority="urgent", requires_ack=True,
                body="Check the Goals section " + HOSTILE)
    tool(c_mcp, "post_session_message", session_id=c_id, kind="decision", body="Goals before scope.")
    tool(c_mcp, "post_session_message", session_id=c_id, kind="todo", body="Then the scope.")
    assignment = tool(w_mcp, "get_session_assignment", session_id=c_id, message_id=todo["message_id"])
    assert worker.post("/workspace/leases", {"region": {"heading": ["Release plan", "Goals"]}}).status_code == 201
    tool(w_mcp, "complete_session_message", session_id=c_id, message_id=todo["message_id"], answer="checked: fine",
         completion_key="W-goals-1", expected_assignment_fence=assignment["assignment_fence"],
         recording_session_id=w_id)
    page = chromium.new_page(viewport={"width": 1280, "height": 900})
    shot = Shots(page, tmp_path / "screenshots")
    try:
        page.goto(ce("console", str(room.document)).stdout.strip())
        page.wait_for_selector("#live.good")
        # the coordinator's board: one open todo left (the urgent one was completed), the latest decision
        page.fill("#session-search", "coordinator")
        page.click(f"#session-list [data-sid='{c_id}']")
        facts = page.locator("#summary-discussion [data-facts=discussion]")
        expect(facts).to_contain_text("4 retained messages")
        expect(page.locator("#summary-discussion [data-list=open_todos]")).to_have_text("1 open todo")
        expect(page.locator("#summary-discussion li.todo")).to_contain_text("Then the scope.")
        expect(page.locator("#summary-discussion li[data-kind=decision]")).to_contain_text("Goals before scope.")
        expect(page.locator("#summary-discussion li[data-kind=answer]")).to_contain_text("checked: fine")
        expect(page.locator("#summary-handoff [data-facts=handoff]")).to_contain_text("0 todos completed")
        shot("summaries-coordinator")
        # a new todo shows up in the summary without a reload
        tool(c_mcp, "post_session_message", session_id=c_id, kind="todo", body="And the risks " + HOSTILE)
        expect(page.locator("#summary-discussion [data-list=open_todos]")).to_have_text("2 open todos")
        expect(page.locator("#summary-discussion li.todo").nth(1)).to_contain_text("<script>")
        assert_not_injected(page, "#board-summary")
        # the worker's session: the completion recorded under it and the lease it holds
        page.fill("#session-search", "worker")
        page.click(f"#session-list [data-sid='{w_id}']")
        handoff = page.locator("#summary-handoff [data-facts=handoff]")
        expect(handoff).to_contain_text("1 todo completed")
        expect(handoff).to_contain_text("1 lease held")
        expect(page.locator(f"#summary-handoff li.completed[data-id='{todo['message_id']}']")).to_contain_text(c_id)
        expect(page.locator("#summary-handoff h3")).to_contain_text("worker")
        expect(page.locator("#summary-discussion [data-facts=discussion]")).to_contain_text("0 retained messages")
        shot("summaries-worker")
    finally:
        page.close()
        c_mcp.close()
        w_mcp.close()
