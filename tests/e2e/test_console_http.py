"""The room console over plain HTTP (no browser): login, the cookie gate, origins, headers, secrets.

A real room (``tests.roomproc``) and the real ``ce console``.
"""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

import httpx
import pytest

from commonroom.http.console import CONSOLE_SCRIPTS
from tests.roomproc import ce

CONSOLE_ROUTES = [("GET", "/console"), ("GET", "/console/assets/console.js"), ("GET", "/console/assets/console.css"),
                  ("GET", "/workspace/room"), ("GET", "/owner/sessions"), ("GET", "/workspace/observe"),
                  ("POST", "/workspace/boards/s_x/messages"), ("POST", "/workspace/proposals/pr_x/approve")]


def login(room) -> tuple[httpx.Client, str]:
    """A client holding the console cookie (through ``ce console``'s URL), and the URL it used."""
    done = ce("console", str(room.document))
    assert done.returncode == 0, done.stderr
    url = done.stdout.strip()
    assert re.fullmatch(rf"{re.escape(room.owner)}/console/login\?code=crc_[A-Za-z0-9_-]{{43}}", url), url
    client = httpx.Client(timeout=30)
    answer = client.get(url)
    assert answer.status_code == 303 and answer.headers["location"] == "/console"
    return client, url


def test_login_sets_a_strict_cookie_once_and_redirects_to_a_clean_url(room):
    client, url = login(room)
    port = room.state["owner_port"]
    cookie = client.cookies.get(f"commonroom_console_{port}")
    assert cookie and cookie.startswith("crk_")
    answer = httpx.get(url)  # single use
    assert answer.status_code == 401 and answer.json()["error"] == "unauthorized"
    assert "set-cookie" not in answer.headers
    first = httpx.Client().get(ce("console", str(room.document)).stdout.strip())
    header = first.headers["set-cookie"]
    for attribute in ("HttpOnly", "SameSite=Strict", "Path=/"):
        assert attribute in header
    page = client.get(room.owner + "/console")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert room.document.name in page.text
    # no secret in the page or its URLs
    assert cookie not in page.text and "code=" not in page.text and room.owner_token not in page.text


def test_every_console_route_needs_the_cookie_or_the_owner_bearer(room):
    for cookies in ({}, {f"commonroom_console_{room.state['owner_port']}": "crk_forged"}):
        for method, path in CONSOLE_ROUTES:
            answer = httpx.request(method, room.owner + path, cookies=cookies, json={} if method == "POST" else None,
                                   headers={"Origin": room.owner}, timeout=30)
            assert answer.status_code == 401, (method, path, answer.status_code)
            body = answer.json()
            assert body["error"] == "unauthorized" and set(body) >= {"error", "message", "details"}
    bearer = {"Authorization": f"Bearer {room.owner_token}"}
    assert httpx.get(room.owner + "/console", headers=bearer).status_code == 200
    assert httpx.get(room.owner + "/console/assets/console.js", headers=bearer).status_code == 200
    assert httpx.get(room.owner + "/console/assets/nope.js", headers=bearer).status_code == 404
    assert httpx.get(room.owner + "/console/login").status_code == 401  # no code


def test_state_changes_need_the_exact_origin_and_only_the_console_mutations(room):
    client, _ = login(room)
    alice = room.join("alice", "read,observe,message")
    path = f"{room.owner}/workspace/boards/{alice.session['id']}/messages"
    body = {"kind": "note", "body": "hi"}
    port = room.state["owner_port"]
    for origin in (None, "http://evil.example", f"http://localhost:{port}", "null", room.ingress):
        headers = {"Origin": origin} if origin else {}
        answer = client.post(path, json=body, headers=headers)
        assert answer.status_code == 403, (origin, answer.text)
        assert answer.json()["details"]["reason"] == "cross_origin"
    answer = client.post(path, json=body, headers={"Origin": room.owner})
    assert answer.status_code == 201, answer.text
    message = answer.json()
    assert message["author"]["name"] == "operator" and message["author_session_id"] is None
    refused = client.post(room.owner + "/owner/invitations", json={"participant": "x", "capabilities": ["read"]},
                          headers={"Origin": room.owner})
    assert refused.status_code == 403 and refused.json()["details"]["reason"] == "console_mutation"
    # reads work with the cookie alone; the cookie means nothing on the session ingress
    assert client.get(room.owner + "/owner/sessions").json()["sessions"][0]["session"]["id"] == alice.session["id"]
    assert client.get(room.ingress + "/workspace/room").status_code == 401


def test_the_page_and_assets_carry_a_strict_policy_and_no_inline_code(room):
    client, _ = login(room)
    page = client.get(room.owner + "/console")
    policy = page.headers["content-security-policy"]
    assert "default-src 'none'" in policy and "script-src 'self'" in policy and "style-src 'self'" in policy
    assert "unsafe-inline" not in policy and "unsafe-eval" not in policy
    assert page.headers["x-content-type-options"] == "nosniff" and page.headers["cache-control"] == "no-store"
    assert not re.search(r"<script(?![^>]*\bsrc=)[^>]*>", page.text), "inline script"
    assert "<style" not in page.text and " style=" not in page.text and "http://" not in page.text.replace(
        "http://www.w3.org", "")
    # every script of the console is served (console.js imports the others), and none writes HTML
    shipped = {p.name for p in (Path(__file__).parents[2] / "commonroom" / "static" / "console").glob("*.js")}
    assert shipped == set(CONSOLE_SCRIPTS), shipped ^ set(CONSOLE_SCRIPTS)
    for name in CONSOLE_SCRIPTS:
        answer = client.get(room.owner + "/console/assets/" + name)
        assert answer.status_code == 200 and answer.headers["content-type"].startswith("text/javascript")
        script = answer.text
        assert "innerHTML" not in script and "insertAdjacentHTML" not in script and "eval(" not in script, name


def test_codes_and_cookies_are_kept_only_as_digests_and_never_logged(room):
    client, url = login(room)
    code = url.split("code=")[1]
    cookie = client.cookies.get(f"commonroom_console_{room.state['owner_port']}")
    db = sqlite3.connect(f"file:{room.document}.commonroom.db?mode=ro", uri=True)
    try:
        stored = " ".join(v for (v,) in db.execute("SELECT value FROM meta WHERE key LIKE 'console_%'"))
    finally:
        db.close()
    assert stored and code not in stored and cookie not in stored
    log = (room.document.parent / f"{room.document.name}.serve.log").read_text()
    assert code not in log and cookie not in log


def test_ce_console_without_a_room_fails_clearly(tmp_path):
    document = tmp_path / "idle.md"
    document.write_text("# Idle\n")
    done = ce("console", str(document))
    assert done.returncode != 0 and "no room is running" in done.stderr


@pytest.mark.parametrize("limit", ["0", "201", "x"])
def test_sessions_list_checks_its_limit(room, limit):
    answer = httpx.get(room.owner + f"/owner/sessions?limit={limit}",
                       headers={"Authorization": f"Bearer {room.owner_token}"})
    assert answer.status_code == 400
