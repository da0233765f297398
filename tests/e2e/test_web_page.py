"""The participant page (``GET /`` on the session ingress) in a real headless Chromium against a real room.

Two people in browsers (their own contexts: two tabs that share nothing)
and one ``ce`` participant work the same room, each seeing the others'
changes live: invitation links from ``ce invite --link``, the document
with line numbers, leases and proposals on their lines, proposing with a
diff, a stale base (the conflict, then a clean rebase), reviewing,
versions, handoffs, boards (reply, answer, complete a todo, ACK), the
room away and back. Every name, summary, body and the document carry the
console tests' hostile markup, which must stay text. The page is checked
at 1280 and 390 px (no sideways scroll), by keyboard alone, for its
Content-Security-Policy, JavaScript errors and with axe-core (pinned in
``tests/clients/package.json``, injected by the test).

Debian's ``chromium`` (:func:`tests.chromium.ensure_chromium`), driven by
Playwright for Python. Screenshots go to :data:`ARTIFACTS` (the ones
docs/web.md shows are copied to ``docs/images/`` by hand).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import time
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import expect

from commonroom.http.console import CSP
from commonroom.http.participant import PAGE_SCRIPTS
from tests.clients.generators import HERE as NPM_HERE
from tests.clients.generators import npm_packages
from tests.conftest import SAMPLE
from tests.roomproc import ce, start_room

ARTIFACTS = Path("/tmp/commonroom-web-artifacts")
HOSTILE = "<script>window.__pwned=1</script><img src=x onerror=\"window.__pwned=2\"> "
EVIL_NAME = "dora<img src=x onerror=window.__pwned=3>"
ALL = "read,observe,propose,lease,approve,handoff,message"


@pytest.fixture(scope="module")
def room(tmp_path_factory):
    """One room for the module (its document: the sample)."""
    r = start_room(tmp_path_factory.mktemp("web"), SAMPLE)
    yield r
    r.stop()


@pytest.fixture(scope="module")
def chromium(chromium):
    """The suite's Chromium (tests/conftest.py), with this module's screenshot folder made; each person gets a
    context of their own."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    return chromium


class Person:
    """One browser participant: a context, its page, what went wrong in it."""

    def __init__(self, browser, width: int, name: str):
        self.context = browser.new_context(viewport={"width": width, "height": 900})
        # CSP violations are recorded by the page itself (an init script runs outside the page's CSP)
        self.context.add_init_script("window.__csp = []; document.addEventListener('securitypolicyviolation', "
                                     "(e) => window.__csp.push(e.violatedDirective + ' ' + e.blockedURI));")
        self.page = self.context.new_page()
        self.name = name
        self.errors: list[str] = []
        self.dialogs: list[str] = []
        self.page.on("pageerror", lambda e: self.errors.append(f"pageerror: {e}"))
        self.page.on("console", self._console)
        self.page.on("dialog", lambda d: (self.dialogs.append(d.message), d.dismiss()))

    def _console(self, message) -> None:
        # Chromium itself logs a refused request (the conflict the test provokes) and the connections refused
        # while the room is down; those are the network's, not the page's. Every other error counts.
        expected = ("the server responded with a status of 409", "net::ERR_CONNECTION_REFUSED")
        if message.type == "error" and not any(text in message.text for text in expected):
            self.errors.append(f"console: {message.text}")

    def shot(self, name: str, full_page: bool = True, part: str | None = None) -> Path:
        """A screenshot in :data:`ARTIFACTS`: the page, or only the element ``part`` (a CSS selector)."""
        path = ARTIFACTS / f"{name}.png"
        if part is not None:
            self.page.locator(part).screenshot(path=str(path))
        else:
            self.page.screenshot(path=str(path), full_page=full_page)
        print(f"screenshot: {path}")
        return path

    def clean(self) -> None:
        """No JavaScript error, no dialog, no CSP violation, nothing from the room became markup."""
        assert self.errors == [], self.errors
        assert self.dialogs == []
        assert self.page.evaluate("window.__csp") == []
        assert self.page.evaluate("window.__pwned === undefined")
        assert self.page.locator("#room script, #room img, #notice img").count() == 0

    def sideways(self) -> int:
        return self.page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth")

    def close(self) -> None:
        self.context.close()


def link(room, participant: str, caps: str = ALL) -> str:
    out = ce("invite", str(room.document), "-p", participant, "--cap", caps, "--link")
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def ce_call(session: Path, method: str, path: str, data=None) -> dict:
    args = ["call", method, path, "--session-file", str(session), "--json"]
    if data is not None:
        args += ["-d", json.dumps(data)]
    out = ce(*args)
    assert out.returncode == 0, (out.stdout, out.stderr)
    return json.loads(out.stdout)


def operator_approve(room, proposal_id: str) -> None:
    answer = room.operator().post(f"/workspace/proposals/{proposal_id}/approve", {})
    assert answer.status_code == 200, answer.text


def axe(page, tag: str) -> None:
    """axe-core on the page as it is: no serious or critical violation."""
    npm_packages()
    source = (NPM_HERE / "node_modules" / "axe-core" / "axe.min.js").read_text()
    page.evaluate(source + "\n;undefined")  # DevTools evaluation: outside the page's CSP, as a test tool
    result = page.evaluate("axe.run(document, {resultTypes: ['violations']})")
    bad = [(v["id"], v["impact"], [n["target"] for n in v["nodes"]][:3]) for v in result["violations"]
           if v["impact"] in ("serious", "critical")]
    assert bad == [], f"{tag}: {bad}"


def enter(person: Person, url: str) -> None:
    person.page.goto(url)
    person.page.wait_for_selector("#live.good")
    expect(person.page.locator("#doc-text .ln").first).to_be_visible()


def test_the_page_is_served_with_strict_headers_and_no_inline_script(room):
    page = httpx.get(room.ingress + "/")
    assert page.status_code == 200
    assert page.headers["content-security-policy"] == CSP
    assert "'unsafe-inline'" not in CSP and "script-src 'self'" in CSP
    assert page.headers["x-content-type-options"] == "nosniff"
    assert page.headers["referrer-policy"] == "no-referrer"
    scripts = re.findall(r"<script[^>]*>(.*?)</script>", page.text, re.S)
    assert len(scripts) == 2 and set(scripts) == {""}, "every script is a file of the room (src), none inline"
    assert not re.search(r"\son\w+=|style=|<style", page.text)
    # every module of the page is served (page.js imports the others), and only those
    shipped = {p.name for p in (Path(__file__).parents[2] / "commonroom" / "static" / "participant").glob("*.js")}
    assert shipped == set(PAGE_SCRIPTS), shipped ^ set(PAGE_SCRIPTS)
    script_names = (*PAGE_SCRIPTS, "console-kit.js")
    for name, kind in (*((script, "text/javascript") for script in script_names), ("page.css", "text/css"),
                       ("favicon.svg", "image/svg+xml")):
        asset = httpx.get(f"{room.ingress}/assets/{name}")
        assert asset.status_code == 200 and asset.headers["content-type"].startswith(kind)
        assert asset.headers["content-security-policy"] == CSP
    for script in script_names:
        assert "innerHTML" not in httpx.get(f"{room.ingress}/assets/{script}").text
    missing = httpx.get(room.ingress + "/assets/other.js")
    assert missing.status_code == 404 and missing.json()["error"] == "not_found"
    # a local (Unix socket) invitation has no link: said, and nothing printed to open
    local = ce("invite", str(room.document), "-p", "zed", "--transport", "local", "--link")
    assert local.returncode != 0 and local.stdout == "" and "TCP transport" in local.stderr
    # the owner port serves no participant page: the console is the operator's
    assert httpx.get(room.owner + "/").status_code in (401, 404)


def test_two_people_and_a_ce_participant_work_the_room_live(room, chromium, tmp_path):
    alice = Person(chromium, 1280, "alice")
    dora = Person(chromium, 1280, EVIL_NAME)
    bob_session = tmp_path / "bob.json"
    joined = ce("join", room.invite("bob", "read,observe,propose,lease,handoff,message"),
                "--session-file", str(bob_session), "--json")
    assert joined.returncode == 0, joined.stderr
    bob_sid = json.loads(joined.stdout)["session"]["id"]
    try:
        # 1. the invitation link: redeemed in the tab, gone from the address bar, the bearer in this tab only
        url = link(room, "alice")
        assert re.fullmatch(r"http://127\.0\.0\.1:\d+/#join=[A-Za-z0-9_-]+", url)
        enter(alice, url)
        assert alice.page.url == room.ingress + "/"
        assert alice.context.cookies() == []
        assert alice.page.evaluate("sessionStorage.getItem('commonroom-session')").startswith("crs_") or \
            alice.page.evaluate("sessionStorage.getItem('commonroom-session').length") > 20
        alice_sid = alice.page.evaluate("fetch('/workspace/session', {headers: {Authorization: 'Bearer ' + "
                                        "sessionStorage.getItem('commonroom-session')}}).then(r => r.json())"
                                        ".then(s => s.id)")
        # the same link again: used, said in words
        other = Person(chromium, 1280, "again")
        other.page.goto(url)
        expect(other.page.locator("#join-error")).to_contain_text("already used")
        other.close()
        # dora pastes a token instead of a link
        dora.page.goto(room.ingress + "/")
        dora.page.fill("#join-token", room.invite(EVIL_NAME, "read,observe,propose,handoff,message"))
        dora.page.click("#join-form button")
        dora.page.wait_for_selector("#live.good")
        expect(dora.page.locator("#who")).to_contain_text(EVIL_NAME)
        dora_sid = dora.page.evaluate("fetch('/workspace/session', {headers: {Authorization: 'Bearer ' + "
                                      "sessionStorage.getItem('commonroom-session')}}).then(r => r.json())"
                                      ".then(s => s.id)")

        # 2. ce → browsers: bob leases Goals; both pages mark its lines
        lease = ce_call(bob_session, "POST", "/workspace/leases", {"region": {"heading": ["Goals"]}, "ttl_seconds": 600})
        for person in (alice, dora):
            expect(person.page.locator("#doc-text .ln.leased").first).to_be_visible()
            expect(person.page.locator("#doc-text .ln[data-n='6'] .mark.leased")).to_have_count(1)

        # 3. alice proposes on "Storage" in the page: edit in place, the diff, a hostile summary
        alice.page.locator("#doc-text .ln.heading", has_text="Storage").get_by_role("button", name="Propose").click()
        expect(alice.page.locator("#edit-text")).to_have_value(re.compile("sidecar keeps versions"))
        alice.page.fill("#edit-text", "### Storage\n\nThe markdown file is the artifact " + HOSTILE + "\n")
        alice.page.fill("#edit-summary", "storage wording " + HOSTILE)
        alice.page.click("#edit-diff")
        expect(alice.page.locator("#edit-preview .add").first).to_contain_text("the artifact")
        expect(alice.page.locator("#edit-preview .del").first).to_contain_text("sidecar keeps versions")
        alice.page.click("#edit-send")
        expect(alice.page.locator("#edit-status")).to_contain_text("sent on version 1")
        # dora sees it live, on its lines, with its diff, and cannot approve (no approve capability)
        card = dora.page.locator("#proposals li.open", has_text="storage wording")
        expect(card.locator(".diff .add").first).to_contain_text("the artifact")
        expect(card.get_by_role("button", name="Approve")).to_have_count(0)
        expect(dora.page.locator("#doc-text .ln.proposed").first).to_be_visible()
        # ce sees it too
        proposals = ce_call(bob_session, "GET", "/workspace/proposals?status=open")["proposals"]
        assert [p["summary"] for p in proposals] == ["storage wording " + HOSTILE]
        alice.shot("web-proposal-1280")
        dora.shot("web-proposals-panel", part="#proposals-panel")
        # alice approves in the page: a new version everywhere
        alice.page.locator("#proposals li.open", has_text="storage wording").get_by_role("button", name="Approve").click()
        expect(alice.page.locator("#proposals li.approved", has_text="storage wording")).to_be_visible()
        for person in (alice, dora):
            expect(person.page.locator("#doc-meta")).to_contain_text("version 2")
            expect(person.page.locator("#doc-text")).to_contain_text("The markdown file is the artifact <script>")
        assert "the artifact <script>" in ce_call(bob_session, "GET", "/workspace/document")["text"]

        # 4. a stale base: dora edits Transport at v2 while bob's change to it is approved (v3): the conflict
        dora.page.locator("#doc-text .ln.heading", has_text="Transport").get_by_role("button", name="Propose").click()
        dora.page.fill("#edit-text", "### Transport\n\nParticipants dial over the overlay.\n")
        dora.page.fill("#edit-summary", "overlay")
        bobs = ce_call(bob_session, "POST", "/workspace/proposals", {
            "base_version": 2, "region": {"heading": ["Transport"]}, "summary": "unix socket",
            "text": "### Transport\n\nParticipants dial the Unix socket.\n"})
        operator_approve(room, bobs["id"])
        expect(dora.page.locator("#doc-meta")).to_contain_text("version 3")
        dora.page.click("#edit-send")
        expect(dora.page.locator("#edit-status")).to_contain_text("Conflict")
        expect(dora.page.locator("#edit-preview")).to_contain_text("Unix socket")
        dora.shot("web-conflict-1280")
        dora.shot("web-conflict-panel", part="#edit-panel")
        dora.page.get_by_role("button", name="Start again from the head").click()
        expect(dora.page.locator("#edit-text")).to_have_value(re.compile("Unix socket"))
        # ... and a clean rebase: dora edits Open questions at v3 while Goals changes (v4)
        dora.page.locator("#doc-text .ln.heading", has_text="Open questions").get_by_role("button", name="Propose").click()
        dora.page.fill("#edit-text", "## Open questions\n\n1. Who approves proposals on weekends?\n")
        dora.page.fill("#edit-summary", "one question left")
        goals = ce_call(bob_session, "POST", "/workspace/proposals", {
            "base_version": 3, "region": {"heading": ["Goals"]}, "summary": "goals",
            "text": "## Goals\n\n- Ship the room foundation.\n"})
        operator_approve(room, goals["id"])
        expect(dora.page.locator("#doc-meta")).to_contain_text("version 4")
        dora.page.click("#edit-send")
        expect(dora.page.locator("#edit-status")).to_contain_text("rebased from version 3 onto version 4")
        # dora withdraws her own; alice rejects bob's next one with a reason
        mine = dora.page.locator("#proposals li.open", has_text="one question left")
        mine.get_by_role("button", name="Withdraw").click()
        expect(dora.page.locator("#proposals li.withdrawn", has_text="one question left")).to_be_visible()
        ce_call(bob_session, "POST", "/workspace/proposals", {
            "base_version": 4, "region": {"heading": ["Design"]}, "summary": "drop design " + HOSTILE,
            "text": "## Design\n"})
        card = alice.page.locator("#proposals li.open", has_text="drop design")
        card.get_by_role("textbox").fill("keep it")
        card.get_by_role("button", name="Reject").click()
        expect(alice.page.locator("#proposals li.rejected", has_text="keep it")).to_be_visible()

        # 5. versions: every one listed, open one, diff two
        expect(alice.page.locator("#versions li")).to_have_count(4)
        alice.page.get_by_role("button", name="Open v1").click()
        expect(alice.page.locator("#viewer .ln").first).to_have_text("# Release plan")
        alice.page.fill("#diff-from", "1")
        alice.page.fill("#diff-to", "4")
        alice.page.click("#diff-form button")
        expect(alice.page.locator("#viewer .add", has_text="Unix socket")).to_have_count(1)

        # 6. handoffs: alice hands off to dora; dora accepts and asks; alice answers; dora completes; alice approves
        alice.page.fill("#handoff-summary", "Review the Goals " + HOSTILE)
        alice.page.fill("#handoff-assignee", EVIL_NAME)
        alice.page.click("#handoff-form button")
        card = dora.page.locator("#handoffs li", has_text="Review the Goals")
        card.get_by_role("button", name="Accept").click()
        expect(card.locator(".badge.accepted")).to_be_visible()
        card.get_by_label("Question for the owner").fill("Which goal first? " + HOSTILE)
        card.get_by_role("button", name="Ask for input").click()
        owner_card = alice.page.locator("#handoffs li", has_text="Review the Goals")
        expect(owner_card.locator(".question")).to_contain_text("Which goal first?")
        owner_card.get_by_label("Answer to input_1").fill("the foundation")
        owner_card.get_by_role("button", name="Answer").click()
        expect(card.locator(".answer")).to_contain_text("the foundation")
        card.get_by_label("Result").fill("Reviewed: fine.")
        card.get_by_role("button", name="Complete").click()
        expect(owner_card.locator(".badge.result_ready")).to_be_visible()
        alice.shot("web-handoff-1280")
        alice.shot("web-handoffs-panel", part="#handoffs-panel")
        owner_card.get_by_role("button", name="Approve the result").click()
        expect(dora.page.locator("#handoffs li.approved", has_text="Review the Goals")).to_be_visible()
        # bob (ce) hands off to alice; alice sees it live and cancels nothing of his; alice cancels her own second one
        ce_call(bob_session, "POST", "/workspace/handoffs", {"summary": "Proofread " + HOSTILE, "assignee": "alice"})
        expect(alice.page.locator("#handoffs li.open", has_text="Proofread")).to_be_visible()
        alice.page.fill("#handoff-summary", "Never mind this one")
        alice.page.click("#handoff-form button")
        alice.page.locator("#handoffs li", has_text="Never mind").get_by_role("button", name="Cancel the handoff").click()
        expect(bob_sees := alice.page.locator("#handoffs li.cancelled", has_text="Never mind")).to_be_visible()
        assert bob_sees.count() == 1
        assert any(h["status"] == "cancelled" for h in ce_call(bob_session, "GET", "/workspace/handoffs")["handoffs"])

        # 7. boards: bob puts a todo needing an ACK and a question on dora's board; dora ACKs, completes, answers
        todo = ce_call(bob_session, "POST", f"/workspace/boards/{dora_sid}/messages",
                       {"kind": "todo", "body": "Check the links " + HOSTILE, "requires_ack": True})
        ce_call(bob_session, "POST", f"/workspace/boards/{dora_sid}/messages",
                {"kind": "question", "body": "Ready for review? " + HOSTILE})
        item = dora.page.locator(f"#board li[data-id='{todo['message_id']}']")
        expect(item.locator(".badge.ack")).to_have_text("ACK pending")
        item.get_by_role("button", name="ACK", exact=True).click()
        expect(item.locator(".badge.ack")).to_contain_text("ACKed")
        item.get_by_role("button", name="Complete…").click()
        expect(dora.page.locator("#assignment")).to_contain_text("Check the links")
        dora.page.fill("#assignment-answer", "All links fine " + HOSTILE)
        dora.page.locator("#assignment").get_by_role("button", name="Complete").click()
        expect(dora.page.locator(f"#board li[data-id='{todo['message_id']}'] .badge.resolved")).to_be_visible()
        question = dora.page.locator("#board li.question", has_text="Ready for review?")
        question.get_by_role("button", name="Answer").click()
        dora.page.fill("#compose-body", "Yes, go ahead " + HOSTILE)
        dora.page.keyboard.press("Control+Enter")
        expect(dora.page.locator("#board li.answer", has_text="Yes, go ahead")).to_be_visible()
        dora.shot("web-board-1280")
        dora.shot("web-boards-panel", part="#boards-panel")
        # bob (ce) reads the answers; alice opens dora's board (learned from the events) and replies; bob sees it
        bodies = [m["body"] for m in ce_call(bob_session, "GET", f"/workspace/boards/{dora_sid}/messages")["messages"]]
        assert "Yes, go ahead " + HOSTILE in bodies and "All links fine " + HOSTILE in bodies
        alice.page.fill("#board-sid", dora_sid)
        alice.page.click("#board-open button")
        alice.page.locator("#board li.answer", has_text="Yes, go ahead").get_by_role("button", name="Reply").click()
        alice.page.fill("#compose-body", "Thanks " + HOSTILE)
        alice.page.click("#composer button[type=submit]")
        expect(dora.page.locator("#board li.note", has_text="Thanks")).to_be_visible()
        deadline = time.monotonic() + 10
        while "Thanks " + HOSTILE not in [m["body"] for m in ce_call(
                bob_session, "GET", f"/workspace/boards/{dora_sid}/messages")["messages"]]:
            assert time.monotonic() < deadline
            time.sleep(0.2)
        assert alice_sid and bob_sid and lease["id"]
        # however often the marks were redrawn, a leased line carries one mark
        expect(alice.page.locator("#doc-text .ln[data-n='6'] .mark.leased")).to_have_count(1)

        # 8. the rendered view: CommonMark, with the hostile text as text, anchors, lines
        alice.page.click("#view-rendered")
        expect(alice.page.locator("#doc-rendered h3#h-storage")).to_be_visible()
        expect(alice.page.locator("#doc-rendered")).to_contain_text("<script>window.__pwned=1</script>")
        alice.page.select_option("#outline", "h-open-questions")
        assert alice.page.url.endswith("#h-open-questions")
        alice.shot("web-rendered-1280")
        alice.shot("web-rendered-1280-screen", full_page=False)
        alice.page.click("#view-text")
        alice.shot("web-overview-1280")
        alice.shot("web-overview-1280-screen", full_page=False)
        alice.shot("web-versions-panel", part="#versions-panel")
        axe(alice.page, "1280 px")
        axe(dora.page, "1280 px, board")

        # 9. the room away and back: the page says so and catches up
        room_state = room.state
        room.stop()
        expect(alice.page.locator("#live.bad")).to_contain_text("away")
        expect(alice.page.locator("#notice")).to_contain_text("away")
        alice.shot("web-away-1280", full_page=False)
        again = start_room(room.document.parent, name=room.document.name,
                           args=("--port", str(room_state["ingress"]["port"]), "--owner-port",
                                 str(room_state["owner_port"])))
        room.proc, room.state = again.proc, again.state
        expect(alice.page.locator("#live.good")).to_be_visible(timeout=40000)
        expect(alice.page.locator("#notice")).to_contain_text("back")
        ce_call(bob_session, "POST", "/workspace/proposals", {
            "base_version": 4, "region": {"heading": ["Release plan"]}, "summary": "after the restart",
            "text": "# Release plan\n"})
        expect(alice.page.locator("#proposals li.open", has_text="after the restart")).to_be_visible()
        for person in (alice, dora):
            person.clean()
    finally:
        alice.close()
        dora.close()


def test_a_phone_and_the_keyboard(room, chromium):
    """At 390 px nothing scrolls sideways; joining, reading and posting work from the keyboard alone."""
    person = Person(chromium, 390, "erin")
    page = person.page
    try:
        page.goto(room.ingress + "/")
        token = room.invite("erin", "read,observe,propose,message,handoff")

        def tab_to(selector: str, limit: int = 120) -> None:
            for _ in range(limit):
                page.keyboard.press("Tab")
                if page.evaluate(f"document.activeElement && document.activeElement.matches({json.dumps(selector)})"):
                    return
            raise AssertionError(f"Tab never reached {selector}")

        tab_to("#join-token")
        page.keyboard.insert_text(token)
        tab_to("#join-form button")
        page.keyboard.press("Enter")
        page.wait_for_selector("#live.good")
        assert person.sideways() == 0
        person.shot("web-390", full_page=False)
        person.shot("web-390-whole")
        # the keyboard reaches a heading's Propose button, the editor, and the board's composer
        page.wait_for_selector("#doc-text .ln.heading button")
        tab_to("#doc-text .ln.heading button")
        page.keyboard.press("Enter")
        expect(page.locator("#edit-panel")).to_be_visible()
        assert page.evaluate("document.activeElement.id") == "edit-text"
        tab_to("#edit-cancel")
        page.keyboard.press("Enter")
        tab_to("#compose-body")
        page.keyboard.type("From the keyboard " + HOSTILE)
        page.keyboard.press("Control+Enter")
        expect(page.locator("#board li", has_text="From the keyboard")).to_be_visible()
        page.click("#view-rendered")
        assert person.sideways() == 0
        axe(page, "390 px")
        person.clean()
    finally:
        person.close()
