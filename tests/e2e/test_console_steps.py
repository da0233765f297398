"""The operator's next steps in the console, in a real headless Chromium against a real room.

Each step is taken on the page and checked through the room's own API (as
another client sees it): answering a handoff's question, deciding a
result, replying to, answering and completing on a board, breaking a
lease (recorded as the operator), paging through every version and
opening one with line numbers, a failed action reported in its own card,
Approve disabled with its reason, and an HTML page (with the command to
run) for a login link that cannot be used and for ``/console`` without a
login. Screenshots go to ``/tmp/commonroom-console-artifacts/steps/``.
"""

from __future__ import annotations

import re
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import expect

from tests.mcp_wire import Mcp
from tests.roomproc import ce

ARTIFACTS = Path("/tmp/commonroom-console-artifacts/steps")
HOSTILE = "<script>window.__pwned=1</script><img src=x onerror=\"window.__pwned=2\"> "


def tool(mcp: Mcp, name: str, **arguments):
    """A tool's structured answer (asserting it is not an error)."""
    result = mcp.call_tool(name, arguments)
    assert not result["isError"], result
    return result["structuredContent"]


def shot(page, name: str, panel: str | None = None) -> None:
    """The whole page, and the one panel ``panel`` (a CSS selector) when given, as ``name``(-panel).png."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)
    if panel is not None:
        page.locator(panel).screenshot(path=str(ARTIFACTS / f"{name}-panel.png"))


def open_console(chromium, room, host: str = "127.0.0.1"):
    """A logged-in console page (``host``: the name the browser uses), and the JavaScript errors it raised."""
    url = ce("console", str(room.document)).stdout.strip().replace("127.0.0.1", host)
    page = chromium.new_page(viewport={"width": 1280, "height": 900})
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(url)
    page.wait_for_selector("#live.good")
    return page, errors


def test_handoffs_leases_and_the_board_from_the_console(room, chromium):
    alice = room.join("alice", "read,observe,message,propose,lease,handoff")
    bob = room.join("bob", "read,observe,message,handoff")
    page, errors = open_console(chromium, room)
    try:
        # a handoff's question is shown with an answer box; the answer reaches the task
        made = alice.post("/workspace/handoffs", {"summary": "Reorder the goals", "assignee": "bob"}).json()
        handoff, task_id = made["handoff"]["id"], made["task"]["taskId"]
        assert bob.post(f"/workspace/handoffs/{handoff}/accept", {}).status_code == 200
        asked = bob.post(f"/workspace/handoffs/{handoff}/request-input", {"message": "Which goal first? " + HOSTILE})
        assert asked.status_code == 200, asked.text
        item = page.locator(f"#handoffs li[data-id='{handoff}']")
        expect(item.locator("p.question")).to_contain_text("Which goal first? <script>")
        item.locator("textarea").fill("The foundation first.")
        shot(page, "handoff-question", "section.handoffs")
        item.get_by_role("button", name="Send answer").click()
        expect(item.locator(".badge.task")).to_have_text("working")
        task = bob.get(f"/workspace/task?task_id={task_id}").json()
        assert task["status"] == "working" and task["inputResponses"] == {"input_1": {"answer": "The foundation first."}}

        # a result is shown with Approve / Reject; approving decides it
        done = bob.post(f"/workspace/handoffs/{handoff}/complete", {"result": "Goals reordered. " + HOSTILE})
        assert done.status_code == 200, done.text
        expect(item.locator(".result")).to_contain_text("Goals reordered. <script>")
        shot(page, "handoff-result", "section.handoffs")
        item.get_by_role("button", name="Approve result").click()
        expect(item.locator(".badge.approved")).to_have_text("approved")
        assert alice.get(f"/workspace/handoffs/{handoff}").json()["status"] == "approved"
        # a second result is rejected with a reason
        other = alice.post("/workspace/handoffs", {"summary": "Trim the design", "assignee": "bob"}).json()["handoff"]["id"]
        bob.post(f"/workspace/handoffs/{other}/accept", {})
        bob.post(f"/workspace/handoffs/{other}/complete", {"result": "Trimmed."})
        second = page.locator(f"#handoffs li[data-id='{other}']")
        second.get_by_label(re.compile("reason to reject")).fill("too short")
        second.get_by_role("button", name="Reject result").click()
        expect(second.locator(".badge.rejected")).to_have_text("rejected")
        decided = alice.get(f"/workspace/handoffs/{other}").json()
        assert decided["status"] == "rejected" and decided["reason"] == "too short"

        # breaking a crashed agent's lease: two clicks, recorded as the operator
        lease = alice.post("/workspace/leases", {"region": {"heading": ["Release plan", "Goals"]}}).json()
        row = page.locator(f"#leases li[data-id='{lease['id']}']")
        row.get_by_role("button", name="Break").click()
        row.get_by_role("button", name="Break alice's lease?").click()
        expect(page.locator(f"#leases li[data-id='{lease['id']}']")).to_have_count(0)
        assert alice.get("/workspace/leases").json()["leases"] == []
        events = [e for e in alice.get("/workspace/history?limit=200").json()["events"] if e["type"] == "lease.released"]
        assert events[-1]["actor"] == {"participant_id": None, "session_id": None}
        assert events[-1]["payload"] == {"lease_id": lease["id"], "by": "operator", "session_id": alice.session["id"]}

        # the board: answer a question, reply to a note, complete a todo
        sid = alice.session["id"]
        mcp = Mcp(room.ingress, alice.token)
        question = tool(mcp, "post_session_message", session_id=sid, kind="question", body="Ship on Friday?")
        todo = tool(mcp, "post_session_message", session_id=sid, kind="todo", body="Count the open questions.")
        page.fill("#session-search", "alice")
        page.click(f"#session-list [data-sid='{sid}']")
        page.wait_for_selector("#board-state.good")
        page.locator(f"#board li[data-id='{question['message_id']}']").get_by_role("button", name="Answer").click()
        expect(page.locator("#reply-chip")).to_contain_text("answering question")
        assert page.locator("#compose-kind").input_value() == "answer"
        page.fill("#compose-body", "Yes, Friday.")
        page.keyboard.press("Control+Enter")
        page.wait_for_selector("#compose-state >> text=posted answer")
        answers = tool(mcp, "list_session_messages", session_id=sid, reply_to=question["message_id"])["messages"]
        assert [(m["kind"], m["body"], m["author"]["name"]) for m in answers] == [("answer", "Yes, Friday.", "operator")]
        expect(page.locator("#reply-chip")).to_be_hidden()

        page.locator(f"#board li[data-id='{todo['message_id']}']").get_by_role("button", name="Complete…").click()
        page.fill("#complete-answer", "Two open questions.")
        shot(page, "board-complete", "section.board")
        page.click("#complete-send")
        page.wait_for_selector("#compose-state >> text=completed todo")
        assignment = tool(mcp, "get_session_assignment", session_id=sid, message_id=todo["message_id"])
        assert assignment["todo"]["status"] == "resolved"
        assert [m["body"] for m in assignment["replies"]] == ["Two open questions."]
        expect(page.locator(f"#board li[data-id='{todo['message_id']}']").get_by_role("button", name="Complete…")).to_have_count(0)
        mcp.close()
        assert page.evaluate("window.__pwned === undefined")
        assert errors == []
    finally:
        page.close()


def test_proposals_versions_and_errors_in_their_cards(room, chromium):
    alice = room.join("alice", "read,observe,propose,lease,write")
    carol = room.join("carol", "read,observe,lease")
    # fourteen versions: more than one page of the versions panel
    version = 1
    for n in range(13):
        text = alice.get("/workspace/document").json()["text"].replace("foundation", f"foundation{n}" if n == 0 else "foundation", 1)
        text = text.rstrip("\n") + f"\n\nNote {n}.\n"
        answer = alice.request("PUT", "/workspace/document", json={"expected_version": version, "text": text,
                                                                   "summary": f"note {n}"})
        assert answer.status_code == 200, answer.text
        version = answer.json()["number"]
    head = alice.get("/workspace/document").json()
    lines = head["text"].split("\n")
    # a proposal on line 1, blocked by carol's lease on lines 1-2
    blocked = alice.post("/workspace/proposals", {"base_version": version, "region": {"lines": [1, 1]},
                                                  "text": "# Release plan (v2)\n", "summary": "retitle"}).json()
    assert carol.post("/workspace/leases", {"region": {"lines": [1, 2]}}).status_code == 201
    # two proposals on the same line: approving the first makes the second no longer apply
    first = alice.post("/workspace/proposals", {"base_version": version, "region": {"lines": [3, 3]},
                                                "text": "First rewrite of line three.\n", "summary": "first"}).json()
    second = alice.post("/workspace/proposals", {"base_version": version, "region": {"lines": [3, 3]},
                                                 "text": "Second rewrite of line three.\n", "summary": "second"}).json()
    page, errors = open_console(chromium, room, host="localhost")  # posts work from the page's own origin
    try:
        # line numbers on the document
        expect(page.locator("#document span[data-n='1']")).to_have_text(lines[0] + "\n")
        assert page.locator("#document span[data-n]").count() == len(head["text"].rstrip("\n").split("\n"))
        # Approve disabled with the reason on the blocked proposal
        card = page.locator(f".card[data-id='{blocked['id']}']")
        expect(card.get_by_role("button", name="Approve")).to_be_disabled()
        expect(card.locator(".why")).to_contain_text("carol holds lines 1–2")
        page.locator(f".card[data-id='{first['id']}']").get_by_role("button", name="Approve").click()
        expect(page.locator("#head")).to_have_text(f"v{version + 1}")
        # the second no longer applies (its review says so): Approve disabled, saying why
        card = page.locator(f".card[data-id='{second['id']}']")
        expect(card.get_by_role("button", name="Approve")).to_be_disabled()
        expect(card.locator(".why")).to_contain_text("no longer applies")
        # the blocked one's base is no longer the head: trying it fails in its own card, then Approve says why
        card = page.locator(f".card[data-id='{blocked['id']}']")
        card.get_by_role("button", name="Approve").click()
        expect(card.locator(".card-error")).to_contain_text("approve failed")
        expect(card.locator(".card-error")).to_contain_text("lease_conflict")
        expect(card.get_by_role("button", name="Approve")).to_be_disabled()
        expect(card.locator(".why")).to_contain_text("blocked")
        shot(page, "proposals", "section.proposals")
        assert alice.get(f"/workspace/proposals/{second['id']}").json()["status"] == "open"

        # every version: page to the oldest, open v1 as its whole text with line numbers
        expect(page.locator("#versions li")).to_have_count(12)
        page.click("#versions-older")
        page.wait_for_selector("#versions >> text=v1")
        page.locator("#versions").get_by_role("button", name="v1", exact=True).click()
        page.click("#version-as-text")
        original = alice.get("/workspace/versions/1").json()["text"]
        expect(page.locator("#version-diff span[data-n='1']")).to_have_text(original.split("\n")[0] + "\n")
        assert page.locator("#version-diff span[data-n]").count() == len(original.rstrip("\n").split("\n"))
        shot(page, "version-1-text", "section.versions")
        page.click("#versions-newer")
        page.wait_for_selector(f"#versions >> text=v{version + 1}")
        assert errors == []
    finally:
        page.close()


def test_a_login_that_cannot_be_used_is_a_page_that_says_what_to_run(room, chromium):
    url = ce("console", str(room.document)).stdout.strip()
    page = chromium.new_page()
    try:
        page.goto(url)
        page.wait_for_selector("#live.good")
        again = chromium.new_page()
        answer = again.goto(url)  # the same link twice: used
        assert answer.status == 401
        expect(again.locator("h1")).to_have_text("This login link cannot be used")
        expect(again.locator("pre")).to_have_text(f"ce console {room.document.name}")
        shot(again, "login-used")
        answer = again.goto(room.owner + "/console")  # a page of its own context: no login there
        assert answer.status == 401
        expect(again.locator("h1")).to_have_text("You are not logged in to this console")
        assert "content-security-policy" in answer.headers
        shot(again, "not-logged-in")
        again.close()
    finally:
        page.close()
    # an API client keeps the JSON error
    plain = httpx.get(room.owner + "/console")
    assert plain.status_code == 401 and plain.json()["error"] == "unauthorized"
