"""Every error code's ``next:`` hint: the one step that can work, or nothing.

Each code of the catalogue has an entry in :data:`commonroom.cli.render.NEXT`;
every ``ce`` command a hint names is a real command; the hints worded from
the envelope (capability, head, retry time) follow it, and the cases where
no step of the caller's helps (a wrong assignee, a bad argument) say nothing.
"""

from __future__ import annotations

import re

import pytest

from commonroom.cli.main import COMMANDS
from commonroom.cli.render import NEXT, next_step
from commonroom.errors import STATUS

#: What each code's hint says (a substring), or "" for no hint: one row per code of the catalogue.
EXPECTED: dict[str, str] = {
    "unauthorized": "ce join TOKEN",
    "session_expired": "new invitation",
    "permission_denied": "",
    "invitation_expired": "new invitation",
    "invitation_revoked": "new invitation",
    "invitation_redeemed": "new one",
    "unsupported_version": "commonroom version the room runs",
    "stale_version": "rerun with --base 7",
    "lease_conflict": "ce lease list",
    "proposal_not_found": "ce proposal list",
    "proposal_conflict": "ce proposal list",
    "invalid_region": "--heading",
    "version_not_found": "ce version list",
    "transport_unavailable": "ce status FILE",
    "limit_exceeded": "",
    "invalid_request": "",
    "not_found": "check the id",
    "method_not_allowed": "",
    "handoff_not_found": "ce handoff list",
    "handoff_conflict": "",
    "idempotency_mismatch": "--idempotency-key",
    "message_not_found": "ce board list BOARD",
    "peer_not_found": "ce board peers",
    "assignment_stale": "ce board assignment BOARD MESSAGE",
    "assignment_history_lost": "ce board assignment BOARD MESSAGE",
    "assignment_too_large": "",
    "completion_mismatch": "--key",
    "completion_persistence_uncertain": "the exact same command again",
    "storage_unavailable": "disk space",
}


@pytest.fixture(autouse=True)
def no_address():
    """Each hint worded for no known address: an in-process ``ce`` run elsewhere in the suite may have left one
    in this thread's context (``ADDRESS`` is set once per command, and a process runs one)."""
    from commonroom.cli.sessions import ADDRESS

    token = ADDRESS.set(None)
    yield
    ADDRESS.reset(token)


def test_every_code_has_a_decided_hint():
    assert set(NEXT) == set(STATUS) == set(EXPECTED)


@pytest.mark.parametrize("code", sorted(STATUS))
def test_each_codes_hint(code: str):
    envelope = {"error": code, "message": "m", "details": {}}
    if code == "stale_version":
        envelope["current_version"] = 7
    hint = next_step(envelope)
    if EXPECTED[code]:
        assert EXPECTED[code] in hint, (code, hint)
    else:
        assert hint == "", (code, hint)
    for command in re.findall(r"\bce ([a-z][a-z-]*)", hint.replace("ce --version", "")):
        assert command in COMMANDS, (code, command)


def test_hints_worded_from_the_envelope():
    assert next_step({"error": "permission_denied", "details": {"required": "approve"}}) == \
        "ask the room's operator for an invitation with the 'approve' capability"
    # a wrong assignee (or another owner's proposal): no capability helps, so nothing is suggested
    assert next_step({"error": "permission_denied", "details": {}}) == ""
    assert next_step({"error": "permission_denied", "details": {"required": "assignee"}}) == ""
    assert next_step({"error": "limit_exceeded", "retry_after_seconds": 3}) == "retry after 3 s"
    assert next_step({"error": "stale_version", "current_version": 4, "expected_version": 3}).endswith("--expected 4")


@pytest.mark.parametrize(("address", "expected"), [
    (None, "list the proposals with ce proposal list"),
    (("file", "/rooms/notes.md"), "list the proposals with ce proposal list /rooms/notes.md"),
    (("session", "my alice.json"), "list the proposals with ce proposal list --session-file 'my alice.json'"),
    (("session", ""), "list the proposals with ce proposal list"),  # the default session: ce finds it again
])
def test_a_hint_names_the_command_as_the_caller_reached_the_room(address, expected):
    from commonroom.cli.sessions import ADDRESS

    token = ADDRESS.set(address)
    try:
        assert next_step({"error": "proposal_not_found", "details": {}}) == expected
        board = next_step({"error": "message_not_found", "details": {}})
        assert board.endswith("ce board list BOARD" + (" --session-file 'my alice.json'"
                                                       if address and address[0] == "session" and address[1]
                                                       else ""))
        unreachable = next_step({"error": "transport_unavailable", "details": {}})
        if address and address[0] == "session":  # a participant has no FILE: no ce status FILE for them
            assert "FILE" not in unreachable and "ce " not in unreachable and "operator" in unreachable
        elif address:
            assert "ce status /rooms/notes.md" in unreachable
        assert "session.json" not in next_step({"error": "unauthorized", "details": {}})
    finally:
        ADDRESS.reset(token)
