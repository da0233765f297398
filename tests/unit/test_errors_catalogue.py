"""The one error catalogue (``commonroom.errors``) against the seed and the schema.

The seed's code → status table and recovery-field list are parsed from
``tests/data/seeds/protocol.txt`` itself, so the catalogue cannot drift from
the specification unnoticed. The wire envelope is checked against
``schema/error.json``; the ``ce`` exit statuses must be distinct and clear of
the generic ones (0 success, 1 failure, 2 usage error); and the exit-code
table in ``docs/operator.md`` must be exactly the one :func:`exit_code_table`
renders from :data:`commonroom.errors.EXIT_CODES`.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from commonroom import errors, schemas
from commonroom.schemas import load_all
from tests.shared_data import PROTOCOL_SEED

ROOT = Path(__file__).resolve().parents[2]
SEED = PROTOCOL_SEED
OPERATOR_DOC = ROOT / "docs" / "operator.md"

#: A sample value for every recovery field (valid under schema/error.json).
RECOVERY_SAMPLES = {
    "base_version": 3,
    "current_version": 5,
    "expected_version": 4,
    "diff": "--- a\n+++ b\n@@ -1 +1 @@\n-x\n+y\n",
    "changes": [{"version": 4, "author": "alice", "summary": "edit",
                 "created_at": "2026-01-02T03:04:05.000006+00:00"}],
    "retry_after_seconds": 7,
    "lease_id": "l_1",
    "proposal_id": "pr_1",
    "region": {"heading": ["Design"]},
}


def seed_text() -> str:
    if not SEED.exists():
        pytest.fail(f"the protocol seed is missing at {SEED}")
    return SEED.read_text("utf-8")


def seed_status_table() -> dict[str, set[int]]:
    """The seed's ``Code Status`` table: code → the statuses it allows."""
    lines = seed_text().split("Code Status\n", 1)[1].split("\n\n", 1)[0].splitlines()
    table: dict[str, set[int]] = {}
    for line in lines:
        codes = [c.strip() for c in re.split(r"\s\d", line, maxsplit=1)[0].split(",")]
        statuses = {int(n) for n in re.findall(r"\b(\d{3})\b", line)}
        assert codes and statuses, f"cannot parse seed line {line!r}"
        for code in codes:
            table[code] = statuses
    return table


def seed_recovery_fields() -> list[str]:
    match = re.search(r"recovery fields at the top level when they apply: ([a-z_, ]+)\.", seed_text())
    assert match, "the seed's recovery-field sentence moved"
    return [f.strip() for f in match.group(1).split(",")]


def exit_code_table() -> str:
    """The Markdown exit-code table of docs/operator.md, from EXIT_CODES."""
    rows = [
        "| Exit status | Meaning |",
        "|---:|---|",
        "| 0 | success |",
        "| 1 | failure without a catalogue code |",
        "| 2 | usage error (an unknown option, a missing argument, a value of the wrong type); "
        "`ce serve` cannot start (bad file, busy port, port out of range) |",
        "| 3 | `ce serve`: a room is already running for this file |",
    ]
    for code, status in sorted(errors.EXIT_CODES.items(), key=lambda item: item[1]):
        http = "429; 413, 414, 431, 408 or 503 for the server's limits" if code == "limit_exceeded" \
            else str(errors.STATUS[code])
        rows.append(f"| {status} | `{code}` (HTTP {http}) |")
    return "\n".join(rows) + "\n"


#: Codes DESIGN.md adds (Decisions for handoffs, boards and the console), with their statuses.
DESIGN_CODES = {"handoff_not_found": 404, "handoff_conflict": 409, "idempotency_mismatch": 409,
                "message_not_found": 404, "peer_not_found": 404, "assignment_stale": 409,
                "assignment_history_lost": 409, "assignment_too_large": 409, "completion_mismatch": 409,
                "completion_persistence_uncertain": 503}


def test_status_table_is_the_seeds():
    seed = seed_status_table()
    ours = {code: status for code, status in errors.STATUS.items()
            if code not in ("not_found", "method_not_allowed", "storage_unavailable", *DESIGN_CODES)}
    assert set(ours) == set(seed), "every seed code, and no other except ours and DESIGN.md's"
    for code, status in DESIGN_CODES.items():
        assert errors.STATUS[code] == status, code
    for code, status in ours.items():
        assert status in seed[code], code
    assert seed["limit_exceeded"] == {429, 413}
    assert errors.STATUS["not_found"] == 404


def test_recovery_fields_are_the_seeds():
    assert list(errors.RECOVERY_FIELDS) == seed_recovery_fields()
    props = set(load_all()["error.json"]["properties"]) - {"error", "message", "details"}
    assert props == set(errors.RECOVERY_FIELDS)
    assert set(RECOVERY_SAMPLES) == set(errors.RECOVERY_FIELDS)


def test_schema_code_enum_is_the_catalogue():
    enum = load_all()["error.json"]["$defs"]["ErrorCode"]["enum"]
    assert sorted(enum) == sorted(errors.STATUS)


def test_every_code_has_one_class():
    assert set(errors.BY_CODE) == set(errors.STATUS)
    for code, cls in errors.BY_CODE.items():
        assert issubclass(cls, errors.CommonroomError)
        assert cls.code == code
        assert cls("x").status == errors.STATUS[code]
        assert cls.__doc__


def test_exit_codes_are_distinct_and_clear_of_generic_ones():
    assert set(errors.EXIT_CODES) == set(errors.STATUS)
    values = list(errors.EXIT_CODES.values())
    assert len(set(values)) == len(values)
    assert all(3 < v < 126 for v in values), "0-3 are generic; 126+ are the shell's"


@pytest.mark.parametrize("code", sorted(errors.STATUS))
def test_envelope_shape_for_every_code(code):
    cls = errors.BY_CODE[code]
    bare = cls("something went wrong")
    body = bare.to_dict()
    assert body == {"error": code, "message": "something went wrong", "details": {}}
    assert list(body) == ["error", "message", "details"]
    assert schemas.errors_of("error", body) == []
    assert bare.exit_code == errors.EXIT_CODES[code]

    full = cls("with recovery", details={"k": "v"}, **RECOVERY_SAMPLES)
    body = full.to_dict()
    assert list(body) == ["error", "message", "details", *errors.RECOVERY_FIELDS]
    assert schemas.errors_of("error", body) == []
    again = errors.from_dict(body)
    assert type(again) is cls and again.to_dict() == body


def test_none_recovery_values_are_left_out():
    body = errors.StaleVersion("stale", base_version=None, current_version=2).to_dict()
    assert "base_version" not in body and body["current_version"] == 2


def test_unknown_recovery_field_is_a_programming_error():
    with pytest.raises(ValueError):
        errors.StaleVersion("x", version=3)


def test_limit_exceeded_may_be_413_for_a_body():
    assert errors.LimitExceeded("slow down").status == 429
    assert errors.LimitExceeded("too big", status=413).status == 413


def test_schema_rejects_what_the_catalogue_never_sends():
    assert schemas.errors_of("error", {"error": "teapot", "message": "x", "details": {}})
    assert schemas.errors_of("error", {"error": "not_found", "message": "x"})
    assert schemas.errors_of("error", {"error": "not_found", "message": "x", "details": {}, "extra": 1})


def test_unknown_wire_code_becomes_invalid_request():
    error = errors.from_dict({"error": "teapot", "message": "short and stout", "details": {}})
    assert isinstance(error, errors.InvalidRequest)
    assert error.message == "short and stout"


def test_operator_doc_has_the_generated_exit_code_table():
    text = OPERATOR_DOC.read_text("utf-8")
    assert exit_code_table() in text, (
        "docs/operator.md's exit-code table is out of date; paste this:\n" + exit_code_table()
    )


def test_exit_codes_are_stable():
    """Published exit statuses never move: new codes are appended, never inserted."""
    pinned = {
        "unauthorized": 10, "permission_denied": 11, "invitation_expired": 12,
        "invitation_revoked": 13, "invitation_redeemed": 14, "unsupported_version": 15,
        "session_expired": 16, "lease_conflict": 17, "stale_version": 18,
        "proposal_not_found": 19, "proposal_conflict": 20, "invalid_region": 21,
        "version_not_found": 22, "transport_unavailable": 23, "limit_exceeded": 24,
        "invalid_request": 25, "not_found": 26,
    }
    assert {code: errors.EXIT_CODES[code] for code in pinned} == pinned
