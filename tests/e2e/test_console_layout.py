"""The room console at 1280 and 390 px in a real Chromium.

A real room (tests/roomproc.py) and Debian's ``chromium`` driven by
Playwright, as in test_console_browser.py. At each width: no horizontal
scroll, the header counts the lines of a 23-line file as 23, every entry of
the session picker fits its box, the board shows the ACK state (pending,
then ACKed after a real MCP tool call of the board's session). Then the
login cookie goes away and the room restarts: the page says the login has
ended and how to get a new one (``ce console FILE``), and stops asking
``/workspace/observe``. Screenshots are kept under
``/tmp/commonroom-console-artifacts/layout/`` (and the test's tmp dir); their
paths are printed.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from playwright.sync_api import expect

from tests.e2e.test_console_browser import ARTIFACTS, tool
from tests.mcp_wire import META, Mcp
from tests.roomproc import ce, start_room

#: Where the screenshots of this test stay after it (a folder of their own: test_console_browser empties ARTIFACTS).
LAYOUT_ARTIFACTS = ARTIFACTS / "layout"
#: A 23-line document (23 newlines: the last one ends line 23).
TEXT = "# Layout check\n\n" + "".join(f"- item {n}\n" for n in range(1, 22))
#: Each picker entry: its text, the width its content needs, the width it has (an entry that is cut needs more).
PICKER_FITS = """() => [...document.querySelectorAll("#session-list .session-entry")].map(
  (b) => [b.textContent, b.scrollWidth, b.clientWidth, b.getBoundingClientRect().right,
          document.getElementById("session-list").getBoundingClientRect().right])"""


def shot(page, folder: Path, name: str) -> Path:
    """A full-page screenshot in ``folder`` and under :data:`LAYOUT_ARTIFACTS`; its path printed."""
    path = folder / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    LAYOUT_ARTIFACTS.mkdir(parents=True, exist_ok=True)
    kept = LAYOUT_ARTIFACTS / path.name
    shutil.copyfile(path, kept)
    print(f"screenshot: {kept} (also {path})")
    return kept


def test_console_layout_ack_state_and_ended_login(chromium, tmp_path: Path):
    room = start_room(tmp_path / "room", name="layout.md", text=TEXT)
    restarted = None
    try:
        alice = room.join("alice", "read,observe,message,handoff")
        bob = room.join("bob", "read,observe,message,handoff")
        room.join("a-participant-with-a-long-name", "read")
        sid = bob.session["id"]
        pending = tool(Mcp(room.ingress, alice.token), "post_session_message", session_id=sid, kind="guidance",
                       body="Stop editing the Goals section.", requires_ack=True)
        acked = tool(Mcp(room.ingress, alice.token), "post_session_message", session_id=sid, kind="note",
                     body="Read this one and ACK it.", requires_ack=True)
        Mcp(room.ingress, bob.token).result("tools/call", {"name": "document_read", "arguments": {}},
                                            meta={**META, "ack_session_message_ids": [acked["message_id"]]})

        context = chromium.new_context(viewport={"width": 1280, "height": 900})
        page = context.new_page()
        observes: list[str] = []
        page.on("request", lambda r: observes.append(r.url) if r.url.endswith("/workspace/observe") else None)
        page.goto(ce("console", str(room.document)).stdout.strip())
        page.wait_for_selector("#live.good")
        page.click(f"#session-list [data-sid='{sid}']")
        page.wait_for_selector("#board-state.good")
        for width in (1280, 390):
            page.set_viewport_size({"width": width, "height": 900})
            page.wait_for_timeout(300)
            expect(page.locator("#doc-meta")).to_contain_text("23 lines")
            scroll = page.evaluate("[document.documentElement.scrollWidth, document.body.scrollWidth]")
            assert max(scroll) <= width, (width, scroll)
            fits = page.evaluate(PICKER_FITS)
            assert len(fits) == 3, fits
            for text, needed, has, right, box_right in fits:
                assert needed <= has and right <= box_right + 0.5, (width, text, needed, has, right, box_right)
            assert any("a-participant-with-a-long-name" in text for text, *_ in fits)
            expect(page.locator(f"#board li[data-id='{pending['message_id']}'] .badge.ack")).to_have_text("ACK pending")
            expect(page.locator(f"#board li[data-id='{acked['message_id']}'] .badge.ack.acked")).to_contain_text(
                "ACKed")
            shot(page, tmp_path, f"console-{width}px")

        # the login ends: the cookie is gone, and the stream's next connection is refused
        context.clear_cookies()
        restarted = room.restart()
        ended = page.locator("#login-ended")
        expect(ended).to_be_visible(timeout=60_000)
        expect(ended).to_contain_text("Your console login has ended")
        expect(page.locator("#login-command")).to_have_text("ce console layout.md")
        expect(page.locator("#live")).to_have_text("signed out")
        asked = len(observes)
        page.wait_for_timeout(4000)  # the stream would have been retried by now (1 s, then 2 s)
        assert len(observes) == asked, observes[asked:]
        assert max(page.evaluate("[document.documentElement.scrollWidth, document.body.scrollWidth]")) <= 390
        shot(page, tmp_path, "console-390px-login-ended")
        context.close()
    finally:
        (restarted or room).stop()
