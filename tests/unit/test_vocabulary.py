"""Each closed vocabulary and bound is written once, in ``schema/`` (commonroom.vocabulary).

The engine, the MCP tool descriptions, ``ce``'s help and the docs take the
capabilities, the board message kinds and the lease TTL bounds from it;
these tests fail the day a second copy appears or a derived one differs.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from codegen import docs as codegen_docs
from commonroom import vocabulary
from commonroom.engine.base import CAPABILITIES as ENGINE_CAPABILITIES
from commonroom.engine.board_base import KINDS
from commonroom.engine.leases import DEFAULT_TTL, MAX_TTL, MIN_TTL
from commonroom.operations import OPERATIONS
from commonroom.schemas import load_all

ROOT = Path(__file__).resolve().parents[2]


def test_the_vocabularies_are_the_schema_enums_and_bounds():
    schemas = load_all()
    assert vocabulary.CAPABILITIES == tuple(schemas["common.json"]["$defs"]["Capability"]["enum"])
    assert vocabulary.MESSAGE_KINDS == tuple(schemas["boards.json"]["$defs"]["MessageKind"]["enum"])
    ttl = schemas["editing.json"]["$defs"]["TtlSeconds"]
    assert (vocabulary.LEASE_TTL_MIN, vocabulary.LEASE_TTL_MAX, vocabulary.LEASE_TTL_DEFAULT) == (
        ttl["minimum"], ttl["maximum"], ttl["default"])
    assert ENGINE_CAPABILITIES == vocabulary.CAPABILITIES and KINDS == vocabulary.MESSAGE_KINDS
    assert (MIN_TTL, MAX_TTL, DEFAULT_TTL) == (vocabulary.LEASE_TTL_MIN, vocabulary.LEASE_TTL_MAX,
                                               vocabulary.LEASE_TTL_DEFAULT)


def test_the_kind_counts_of_a_summary_are_keyed_by_the_kinds():
    counts = load_all()["boards.json"]["$defs"]["KindCounts"]
    assert counts["propertyNames"] == {"$ref": "#/$defs/MessageKind"} and "properties" not in counts


def test_every_capability_an_operation_needs_is_one_of_the_vocabulary():
    needed = {cap for op in OPERATIONS for cap in (op.capability, *op.also) if cap}
    assert needed <= set(vocabulary.CAPABILITIES)


def test_the_descriptions_and_help_say_the_current_values():
    post = OPERATIONS["post_session_message"].mcp
    lease = OPERATIONS["lease_acquire"].mcp
    assert post is not None and lease is not None
    assert vocabulary.words(vocabulary.MESSAGE_KINDS) in post.description
    assert f"at most {vocabulary.LEASE_TTL_MAX}" in lease.description


def test_the_skill_lists_every_capability_once_in_order():
    text = (ROOT / "commonroom" / "skills" / "commonroom" / "SKILL.md").read_text("utf-8")
    table = re.search(r"\| capability \| lets you \|\n\| --- \| --- \|\n((?:\|.*\|\n)+)", text)
    assert table is not None
    rows = [re.match(r"\| `([a-z_]+)` \|", line) for line in table.group(1).splitlines()]
    assert [row.group(1) for row in rows if row] == list(vocabulary.CAPABILITIES)


def test_the_docs_fact_spans_are_current():
    assert codegen_docs.stale() == [], "run python -m codegen"


def test_an_unknown_fact_is_refused():
    with pytest.raises(ValueError, match="unknown fact 'nope'"):
        codegen_docs.fill_facts("<!-- fact:nope -->x<!-- /fact -->", "a.md")


#: Separators between the words of a written-out list: spaces, quotes, commas, pipes, slashes, "or"/"and".
_SEP = r"(?:[\s`'\",|/]|\bor\b|\band\b)+"


def _copies(text: str, words: tuple[str, ...], run: int) -> list[str]:
    """Runs of at least ``run`` words of ``words`` written one after another (a copy of the list, whole or
    nearly: an example such as ``--cap read,observe,lease,approve,write`` is shorter)."""
    word = r"\b(?:" + "|".join(map(re.escape, words)) + r")\b"
    return [m.group(0) for m in re.finditer(rf"{word}(?:{_SEP}{word}){{{run - 1},}}", text)]


def _sources() -> list[Path]:
    """Where a second copy could hide: the package, codegen, the test helpers, the docs, README."""
    return sorted([*(ROOT / "commonroom").rglob("*.py"), *(ROOT / "codegen").rglob("*.py"),
                   *(ROOT / "tests").glob("*.py"), *codegen_docs.pages()])


@pytest.mark.parametrize("name,words", [("capabilities", vocabulary.CAPABILITIES),
                                        ("message kinds", vocabulary.MESSAGE_KINDS),
                                        ("priorities", vocabulary.PRIORITIES),
                                        ("proposal statuses", vocabulary.PROPOSAL_STATUSES),
                                        ("handoff statuses", vocabulary.HANDOFF_STATUSES),
                                        ("task statuses", vocabulary.TASK_STATUSES),
                                        ("error codes", tuple(vocabulary.ERROR_STATUS))])
def test_no_second_copy_of_a_vocabulary(name, words):
    run = len(words) if len(words) <= 6 else len(words) - 2  # a short list only when whole
    found = []
    for path in _sources():
        text = codegen_docs.FACT.sub("", path.read_text("utf-8"))  # a fact span is the generated copy
        found += [f"{path.relative_to(ROOT)}: {copy!r}" for copy in _copies(text, words, run)]
    assert found == [], f"{name} written out again; take them from commonroom.vocabulary or a fact span"


def test_the_copy_finder_finds_a_copy():
    assert _copies("`read`, `observe`, `lease`, `propose`, `write`, `approve`, `message`", vocabulary.CAPABILITIES, 6)
    assert not _copies("--cap read,observe,lease,approve,write", vocabulary.CAPABILITIES, 6)
    assert not _copies("a note, a proposal and a question", vocabulary.MESSAGE_KINDS, 7)


def test_a_summary_counts_every_kind_in_the_schema_order(tmp_path):
    from tests.fakeclock import join, open_engine

    engine = open_engine(tmp_path, "# T\n\nx\n")
    try:
        actor, _ = join(engine, "ana", ["read", "message"])
        engine.post_session_message(actor, actor.session_id, vocabulary.MESSAGE_KINDS[-1], "last kind")
        counts = engine.session_discussion_summary(actor, actor.session_id)["by_kind"]
    finally:
        engine.close()
    assert tuple(counts) == vocabulary.MESSAGE_KINDS
    assert counts[vocabulary.MESSAGE_KINDS[-1]] == 1 and sum(counts.values()) == 1


def test_the_statuses_priorities_and_error_codes_are_the_schema_enums():
    defs = {name: schema.get("$defs", {}) for name, schema in load_all().items()}
    assert vocabulary.PRIORITIES == tuple(defs["boards.json"]["Priority"]["enum"])
    assert vocabulary.MESSAGE_STATUSES == tuple(defs["boards.json"]["MessageStatus"]["enum"])
    assert vocabulary.PROPOSAL_STATUSES == tuple(defs["editing.json"]["ProposalStatus"]["enum"])
    assert vocabulary.HANDOFF_STATUSES == tuple(defs["handoffs.json"]["HandoffStatus"]["enum"])
    assert vocabulary.TASK_STATUSES == tuple(defs["handoffs.json"]["TaskStatus"]["enum"])
    codes = defs["error.json"]["ErrorCode"]
    assert tuple(vocabulary.ERROR_STATUS) == tuple(codes["enum"])
    assert set(codes["x-http-status"]) == set(codes["enum"]), "every code has its HTTP status, and only codes do"


def test_the_engine_and_the_catalogue_take_them_from_the_vocabulary():
    from commonroom import errors
    from commonroom.engine import board_base, handoff_base, handoffs, proposals

    assert board_base.PRIORITIES is vocabulary.PRIORITIES and board_base.STATUSES is vocabulary.MESSAGE_STATUSES
    assert proposals.PROPOSAL_STATUSES is vocabulary.PROPOSAL_STATUSES
    assert handoffs.HANDOFF_STATUSES is vocabulary.HANDOFF_STATUSES
    assert set(handoff_base.ACTIVE) | set(handoff_base.TERMINAL) == set(vocabulary.TASK_STATUSES)
    assert errors.STATUS is vocabulary.ERROR_STATUS
    subclasses = [errors.CommonroomError]
    while subclasses:
        cls = subclasses.pop()
        assert cls.code in errors.STATUS, f"{cls.__name__}.code {cls.code!r} is not in error#ErrorCode"
        subclasses += cls.__subclasses__()


def test_a_third_party_transport_type_is_valid_where_a_type_is_named():
    from commonroom import schemas

    hint = {"type": "carrier-pigeon", "address": "coop.example", "port": 7, "encrypted": True, "mode": "private"}
    assert schemas.is_valid("transport.json", hint)
    invite = {"participant": "p", "capabilities": ["read"], "transport": "carrier-pigeon"}
    assert schemas.is_valid("owner.json#InviteRequest", invite)
    for bad in ("Carrier Pigeon", "", "-x", "x" * 33):
        assert not schemas.is_valid("transport.json", {**hint, "type": bad}), bad
        assert not schemas.is_valid("owner.json#InviteRequest", {**invite, "transport": bad}), bad
    documented = load_all()["transport.json"]["$defs"]["TransportType"]["examples"]
    assert {"loopback", "local", "tailcat"} <= set(documented)
