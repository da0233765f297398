"""Every event type the engine emits has a payload schema and is documented."""

from __future__ import annotations

import re
from pathlib import Path

from commonroom import schemas
from commonroom.live.sse import event_bytes, resync_frame
from commonroom.schemas import load_all

ROOT = Path(__file__).resolve().parents[2]
EMIT = re.compile(r'\bemit\(\s*(f?)"([^"]+)"')


def emitted_types() -> list[tuple[bool, str]]:
    found = []
    for path in (ROOT / "commonroom").rglob("*.py"):
        for is_f, name in EMIT.findall(path.read_text("utf-8")):
            found.append((bool(is_f), name))
    return found


def known_types() -> list[str]:
    return load_all()["events.json"]["$defs"]["EventType"]["enum"]


def test_every_emitted_type_is_in_the_schema():
    known = known_types()
    found = emitted_types()
    assert len(found) >= 10
    for is_f, name in found:
        if is_f:
            prefix = name.split("{", 1)[0]
            assert any(t.startswith(prefix) for t in known), name
        else:
            assert name in known, f"{name} has no payload schema in schema/events.json"


def test_every_type_has_its_payload_bound_and_documented():
    defs = load_all()["events.json"]["$defs"]
    bound = {rule["if"]["properties"]["type"]["const"] for rule in defs["Event"]["allOf"]}
    docs = (ROOT / "docs" / "live.md").read_text("utf-8")
    for name in known_types():
        assert name in bound, name
        assert f"`{name}`" in docs, f"{name} is not in docs/live.md"


def test_payload_is_checked_by_type():
    event = {"id": 1, "type": "session.revoked", "time": "2026-11-29T08:00:00.000000+00:00",
             "actor": {"participant_id": None, "session_id": None}, "payload": {}}
    assert schemas.errors_of("events#Event", event) == ["/payload: 'session_id' is a required property"]
    event["payload"] = {"session_id": "s_1", "extra": True}
    assert schemas.errors_of("events#Event", event) == []
    event["type"] = "some.future_type"
    event["payload"] = {"anything": 1}
    assert schemas.errors_of("events#Event", event) == []


def test_frames_on_the_wire():
    event = {"id": 7, "type": "lease.released", "time": "t", "actor": {"participant_id": "p", "session_id": "s"},
             "payload": {"lease_id": "l\nx", "note": "ü"}}
    data = event_bytes(event)
    assert data.startswith(b"id: 7\nevent: lease.released\ndata: {")
    assert data.endswith(b"}\n\n") and data.count(b"\n") == 4  # newlines inside JSON are escaped
    assert "ü".encode() in data
    assert resync_frame("lagged", 9).data == b'event: resync\ndata: {"reason":"lagged","last_event_id":9}\n\n'
