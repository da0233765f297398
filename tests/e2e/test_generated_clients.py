"""The published API works with the generators people use.

Once per module: fetch both listeners' ``/openapi.json`` from a real room,
generate a Python client with ``openapi-python-client`` and TypeScript types
with ``openapi-typescript`` (pinned in ``tests/clients/``) into a temporary
folder, with no warning; then drive a whole session through the generated
Python packages against that room. Nothing generated is kept across runs.
"""

from __future__ import annotations

import importlib
import json
import re
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import ModuleType

import httpx
import pytest

from commonroom.http.openapi import component_name
from commonroom.operations import INGRESS, OPERATIONS, OWNER
from tests.clients import generators
from tests.conftest import SAMPLE
from tests.roomproc import Room, start_room

LISTENERS = (INGRESS, OWNER)
#: The generated packages' import names (unique to this module).
PACKAGES = {INGRESS: "commonroom_ingress_client", OWNER: "commonroom_owner_client"}


@pytest.fixture(scope="module")
def room(tmp_path_factory) -> Room:
    r = start_room(tmp_path_factory.mktemp("room"), SAMPLE)
    yield r
    r.stop()


@pytest.fixture(scope="module")
def documents(room: Room, tmp_path_factory) -> dict[str, Path]:
    """Each listener's OpenAPI document, as the room serves it."""
    folder = tmp_path_factory.mktemp("openapi")
    out = {}
    for listener, base in ((INGRESS, room.ingress), (OWNER, room.owner)):
        r = httpx.get(base + "/openapi.json", timeout=30)
        assert r.status_code == 200, r.text
        out[listener] = folder / f"{listener}.json"
        out[listener].write_bytes(r.content)
    return out


@pytest.fixture(scope="module")
def python_generation(documents, tmp_path_factory) -> dict[str, tuple[Path, str]]:
    """listener → (generated package folder, the generator's output)."""
    folder = tmp_path_factory.mktemp("python_client")
    packages = {listener: folder / PACKAGES[listener] for listener in LISTENERS}
    runs = _both(lambda listener: generators.generate_python(documents[listener], packages[listener]))
    out = {}
    for listener, done in runs.items():
        assert done.returncode == 0, done.stdout + done.stderr
        out[listener] = (packages[listener], done.stdout + done.stderr)
    sys.path.insert(0, str(folder))
    yield out
    sys.path.remove(str(folder))
    for name in [m for m in sys.modules if m.split(".")[0] in PACKAGES.values()]:
        del sys.modules[name]


@pytest.fixture(scope="module")
def typescript_generation(documents, tmp_path_factory) -> dict[str, tuple[str, str, str]]:
    """listener → (the generated .d.ts, stdout, stderr)."""
    folder = tmp_path_factory.mktemp("typescript")
    runs = _both(lambda listener: generators.generate_typescript(documents[listener], folder / f"{listener}.d.ts"))
    out = {}
    for listener, done in runs.items():
        assert done.returncode == 0, done.stdout + done.stderr
        out[listener] = ((folder / f"{listener}.d.ts").read_text(), done.stdout, done.stderr)
    return out


def _both(generate):
    """``generate(listener)`` for both listeners at once (the generators are separate processes)."""
    with ThreadPoolExecutor(len(LISTENERS)) as pool:
        return dict(zip(LISTENERS, pool.map(generate, LISTENERS)))


def _module(listener: str, dotted: str) -> ModuleType:
    return importlib.import_module(f"{PACKAGES[listener]}.{dotted}")


def _snake(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).lower()


# -- Python: openapi-python-client ------------------------------------------


@pytest.mark.parametrize("listener", LISTENERS)
def test_python_client_generates_without_a_warning(python_generation, listener):
    package, output = python_generation[listener]
    assert "warning" not in output.lower(), output
    lines = [line for line in output.splitlines() if line.strip()]
    assert lines == [f"Generating {package}"], output


@pytest.mark.parametrize("listener", LISTENERS)
def test_every_operation_has_an_endpoint_with_its_answer_model(python_generation, documents, listener):
    package, _ = python_generation[listener]
    doc = json.loads(documents[listener].read_text())
    for op in OPERATIONS.http(listener):
        source = package / "api" / op.tag / f"{op.name}.py"
        assert source.exists(), f"no endpoint generated for {op.name}"
        module = _module(listener, f"api.{op.tag}.{op.name}")
        for fn in ("sync", "sync_detailed", "asyncio", "asyncio_detailed"):
            assert callable(getattr(module, fn, None)), (op.name, fn)
        answer = component_name(op.answer)
        assert f"from ...models.{_snake(answer)} import {answer}" in source.read_text(), (op.name, answer)
        declared = doc["paths"][op.http.path][op.http.method.lower()]
        if "requestBody" in declared:
            assert "    body: " in source.read_text(), f"{op.name} takes no body"


def api(listener: str, tag: str, name: str) -> ModuleType:
    """The generated endpoint module of operation ``name``."""
    return _module(listener, f"api.{tag}.{name}")


def _operator(room: Room):
    """The owner package's client with the owner token."""
    owner_pkg = importlib.import_module(PACKAGES[OWNER])
    return owner_pkg.AuthenticatedClient(base_url=room.owner, token=room.owner_token,
                                         raise_on_unexpected_status=True)


def _member(room: Room, name: str, caps: list[str]):
    """Invite ``name`` through the owner client, join through the public ingress client: its client."""
    ingress = importlib.import_module(PACKAGES[INGRESS])
    m, om = _module(INGRESS, "models"), _module(OWNER, "models")
    public = ingress.Client(base_url=room.ingress, raise_on_unexpected_status=True)
    invited = api(OWNER, "owner", "invitation_create").sync(client=_operator(room), body=om.InviteRequest(
        participant=name, capabilities=[om.Capability(c) for c in caps]))
    assert isinstance(invited, om.InviteResult), invited
    assert invited.participant == name and invited.token
    joined = api(INGRESS, "session", "join").sync(client=public, body=m.JoinRequest(invitation=invited.token))
    assert isinstance(joined, m.JoinResult), joined
    assert joined.session.participant.name == name
    return ingress.AuthenticatedClient(base_url=room.ingress, token=joined.token, raise_on_unexpected_status=True)


def test_a_generated_client_drives_a_whole_session(room, python_generation):
    """invite (owner) → join (public) → read → lease → propose → approve → read the new version,
    and error answers come back as the generated Error model."""
    m = _module(INGRESS, "models")
    om = _module(OWNER, "models")
    operator = _operator(room)
    alice = _member(room, "alice", ["read", "lease", "propose"])
    bob = _member(room, "bob", ["read", "lease", "approve", "write"])

    me = api(INGRESS, "session", "session_get").sync(client=alice)
    assert isinstance(me, m.Session) and me.participant.name == "alice"

    doc = api(INGRESS, "document", "document_read").sync(client=alice)
    assert isinstance(doc, m.Document), doc
    assert doc.text == SAMPLE.read_text() and doc.version >= 1
    base = doc.version

    goals = m.RegionType0(heading=["Goals"])
    lease = api(INGRESS, "leases", "lease_acquire").sync(client=alice, body=m.LeaseRequest(region=goals))
    assert isinstance(lease, m.Lease), lease
    assert lease.status == m.LeaseStatus.ACTIVE and lease.participant == "alice"

    # A conflicting lease: 409 lease_conflict, parsed as the Error model.
    conflict = api(INGRESS, "leases", "lease_acquire").sync_detailed(
        client=bob, body=m.LeaseRequest(region=m.RegionType0(heading=["Goals"])))
    assert conflict.status_code == 409
    assert isinstance(conflict.parsed, m.Error), conflict.content
    assert conflict.parsed.error == m.ErrorCode.LEASE_CONFLICT and conflict.parsed.lease_id == lease.id

    new_goals = "## Goals\n\n- Ship it.\n\n"
    proposal = api(INGRESS, "proposals", "proposal_create").sync(client=alice, body=m.ProposalRequest(
        base_version=base, region=goals, text=new_goals, summary="shorter goals"))
    assert isinstance(proposal, m.Proposal), proposal
    assert proposal.status == m.ProposalStatus.OPEN and proposal.author == "alice"

    listed = api(INGRESS, "proposals", "proposals_list").sync(client=bob, status=m.ProposalStatus.OPEN)
    assert isinstance(listed, m.ProposalsPage) and [p.id for p in listed.proposals] == [proposal.id]

    approved = api(INGRESS, "proposals", "proposal_approve").sync(proposal.id, client=bob)
    assert isinstance(approved, m.ApproveResult), approved
    assert approved.proposal.status == m.ProposalStatus.APPROVED
    assert approved.version.number == base + 1 and approved.version.proposal_id == proposal.id

    after = api(INGRESS, "document", "document_read").sync(client=alice)
    assert isinstance(after, m.Document)
    assert after.version == base + 1 and new_goals in after.text and "Keep every edit" not in after.text
    version = api(INGRESS, "document", "version_get").sync(base + 1, client=bob)
    assert isinstance(version, m.VersionInfo) and version.text == after.text

    released = api(INGRESS, "leases", "lease_release").sync(lease.id, client=alice)
    assert isinstance(released, m.Lease) and released.status == m.LeaseStatus.RELEASED

    # A write against the old base: 409 stale_version with its recovery fields, as the Error model.
    stale = api(INGRESS, "document", "document_write").sync_detailed(client=bob, body=m.WriteRequest(
        expected_version=base, text="# Replaced\n"))
    assert stale.status_code == 409
    error = stale.parsed
    assert isinstance(error, m.Error), stale.content
    assert error.error == m.ErrorCode.STALE_VERSION
    assert (error.expected_version, error.current_version) == (base, base + 1)
    assert isinstance(error.diff, str) and "Ship it." in error.diff

    # The operator reads through the owner document's client too.
    head = api(OWNER, "document", "document_read").sync(client=operator)
    assert isinstance(head, om.Document) and head.version == base + 1

    # Not on this listener: the ingress document has no owner routes and vice versa.
    assert not (python_generation[INGRESS][0] / "api" / "owner").exists()
    assert not (python_generation[OWNER][0] / "api" / "session").exists()


def test_a_generated_client_hands_off_work_and_completes_a_todo(room, python_generation):
    """create → accept → complete → approve a handoff (its task completes with the result), then
    post a todo → read the assignment → complete it (a retry replays it), all through the generated client."""
    m = _module(INGRESS, "models")
    owner = _member(room, "gc-owner", ["read", "handoff", "approve", "message"])
    worker = _member(room, "gc-worker", ["read", "handoff", "message"])

    made = api(INGRESS, "handoffs", "handoff_create").sync(client=owner, body=m.HandoffCreateInput(
        summary="write the intro", assignee="gc-worker", idempotency_key="gc-1"))
    assert isinstance(made, m.HandoffAndTask), made
    assert made.handoff.status == m.HandoffStatus.OPEN and made.task.status == m.TaskStatus.WORKING
    again = api(INGRESS, "handoffs", "handoff_create").sync(client=owner, body=m.HandoffCreateInput(
        summary="write the intro", assignee="gc-worker", idempotency_key="gc-1"))
    assert isinstance(again, m.HandoffAndTask) and again.handoff.id == made.handoff.id
    handoff_id = made.handoff.id
    accepted = api(INGRESS, "handoffs", "handoff_accept").sync(handoff_id, client=worker)
    assert isinstance(accepted, m.HandoffAndTask) and accepted.handoff.status == m.HandoffStatus.ACCEPTED
    done = api(INGRESS, "handoffs", "handoff_complete").sync(handoff_id, client=worker,
                                                              body=m.HandoffCompleteBody(result="the intro"))
    assert isinstance(done, m.HandoffAndTask), done
    assert done.handoff.status == m.HandoffStatus.RESULT_READY and done.task.status == m.TaskStatus.COMPLETED
    approved = api(INGRESS, "handoffs", "handoff_approve").sync(handoff_id, client=owner)
    assert isinstance(approved, m.Handoff) and approved.status == m.HandoffStatus.APPROVED
    task = api(INGRESS, "handoffs", "task_get").sync(client=owner, task_id=made.task.task_id)
    assert isinstance(task, m.Task) and task.status == m.TaskStatus.COMPLETED
    events = api(INGRESS, "handoffs", "handoff_events").sync(handoff_id, client=owner)
    assert isinstance(events, m.HandoffEventsPage)
    assert [e.type_ for e in events.events] == ["handoff.created", "handoff.accepted", "handoff.completed",
                                                  "handoff.approved"]

    board = api(INGRESS, "session", "session_get").sync(client=owner).id  # the owner's own board
    todo = api(INGRESS, "boards", "post_session_message").sync(board, client=owner, body=m.PostSessionMessageBody(
        kind=m.MessageKind.TODO, body="check the intro"))
    assert isinstance(todo, m.Message) and todo.status == m.MessageStatus.OPEN
    assignment = api(INGRESS, "boards", "get_session_assignment").sync(board, todo.message_id, client=worker)
    assert isinstance(assignment, m.Assignment), assignment
    assert assignment.todo.message_id == todo.message_id and assignment.completable
    body = m.CompleteSessionMessageBody(answer="checked", completion_key="gc-key",
                                        expected_assignment_fence=assignment.assignment_fence)
    completed = api(INGRESS, "boards", "complete_session_message").sync(board, todo.message_id, client=worker,
                                                                          body=body)
    assert isinstance(completed, m.Completion), completed
    assert completed.todo.status == m.MessageStatus.RESOLVED and not completed.replayed
    assert completed.answer.reply_to == todo.message_id
    replayed = api(INGRESS, "boards", "complete_session_message").sync(board, todo.message_id, client=worker,
                                                                        body=body)
    assert isinstance(replayed, m.Completion) and replayed.replayed
    assert replayed.answer.message_id == completed.answer.message_id
    mismatch = api(INGRESS, "boards", "complete_session_message").sync_detailed(
        board, todo.message_id, client=worker, body=m.CompleteSessionMessageBody(
            answer="other", completion_key="gc-key", expected_assignment_fence=assignment.assignment_fence))
    assert mismatch.status_code == 409 and isinstance(mismatch.parsed, m.Error)
    assert mismatch.parsed.error == m.ErrorCode.COMPLETION_MISMATCH


def test_an_invalid_bearer_is_the_error_model(room, python_generation):
    ingress = importlib.import_module(PACKAGES[INGRESS])
    m = _module(INGRESS, "models")
    stranger = ingress.AuthenticatedClient(base_url=room.ingress, token="crs_not-a-session",
                                           raise_on_unexpected_status=True)
    answer = _module(INGRESS, "api.document.document_read").sync_detailed(client=stranger)
    assert answer.status_code == 401
    assert isinstance(answer.parsed, m.Error) and answer.parsed.error == m.ErrorCode.UNAUTHORIZED


# -- TypeScript: openapi-typescript ------------------------------------------


@pytest.mark.parametrize("listener", LISTENERS)
def test_typescript_types_generate_without_an_error(typescript_generation, documents, listener):
    text, stdout, stderr = typescript_generation[listener]
    assert stderr.strip() == "", stderr
    assert not re.search(r"(?i)\b(error|warn(ing)?)\b", stdout), stdout
    doc = json.loads(documents[listener].read_text())
    for path in doc["paths"]:
        assert f'"{path}": {{' in text, f"{path} missing from the {listener} types"
    for op in OPERATIONS.http(listener):
        assert re.search(rf"^    {op.name}: {{$", text, re.M), f"operation {op.name} missing"
        assert re.search(rf'operations\["{op.name}"\]', text), f"{op.name} not bound to its path"
        assert re.search(rf"^        {component_name(op.answer)}: ", text, re.M), component_name(op.answer)
    for name in doc["components"]["schemas"]:
        assert re.search(rf"^        {name}: ", text, re.M), f"component {name} missing"
    if listener == INGRESS:
        assert "ProposalRequest: {" in text and "proposal_create: {" in text
    else:
        assert "InviteRequest: {" in text and "invitation_create: {" in text
