"""The bundled fast path of validation accepts exactly what the source schemas accept.

``schemas.validate`` asks :func:`commonroom.schemas.fast_validator` (every
``$ref`` inlined) first and the registry-backed :func:`validator` only for
the error of an invalid instance. If the two ever disagreed, a bad input
could reach the engine (fast says valid) or a good one be refused with no
error to name. Instances are drawn from each operation's input schema by a
seeded random walk that stays near the schema (so many are valid) and
strays from it on purpose (wrong types, missing and unknown properties,
out-of-range numbers, each branch of a ``oneOf``).
"""

from __future__ import annotations

import random
import re
from typing import Any

import pytest

from commonroom import schemas
from commonroom.bundle import bundle
from commonroom.operations import OPERATIONS

#: Strings that match the schemas' patterns (times, ids), so patterned properties are valid sometimes.
STRINGS = ["2026-11-30T00:00:00.000000+00:00", "2026-11-30T00:00:00Z", "pr_0123456789abcdef01234567",
           "h_0123456789abcdef01234567", "s_0123456789abcdef01234567", "m_0123456789abcdef01234567"]
ODD: list[Any] = [None, True, 0, -1, 1.5, 2**53, "", "x", "l_0123456789abcdef", [], [1, 2], {}, {"lines": [1, 2]}]


def draw(schema: Any, rng: random.Random, depth: int = 0) -> Any:
    """An instance near ``schema``: valid often, invalid on purpose now and then."""
    if not isinstance(schema, dict) or depth > 6 or rng.random() < 0.06:
        return rng.choice(ODD)
    if "const" in schema:
        return schema["const"]
    if "enum" in schema:
        return rng.choice(schema["enum"])
    for key in ("oneOf", "anyOf"):
        if key in schema:
            return draw(rng.choice(schema[key]), rng, depth + 1)
    if "allOf" in schema:
        parts = [draw(s, rng, depth + 1) for s in schema["allOf"]]
        merged: dict[str, Any] = {}
        for part in parts:
            if not isinstance(part, dict):
                return part
            merged.update(part)
        return merged
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = rng.choice(kind)
    if kind == "object" or "properties" in schema:
        required = set(schema.get("required", ()))
        out = {}
        for name, sub in schema.get("properties", {}).items():
            if rng.random() < (0.95 if name in required else 0.6):
                out[name] = draw(sub, rng, depth + 1)
        if rng.random() < 0.05:
            out["unknown_property"] = 1
        return out
    if kind == "array":
        low = schema.get("minItems", 0)
        high = min(schema.get("maxItems", low + 3), low + 3)
        size = rng.randint(max(0, low - 1), high + 1) if rng.random() < 0.1 else rng.randint(low, high)
        return [draw(schema.get("items", {}), rng, depth + 1) for _ in range(size)]
    if kind == "integer":
        low, high = schema.get("minimum", -5), schema.get("maximum", 10**6)
        return rng.choice([low, high, low - 1, high + 1, rng.randint(low, min(high, low + 1000))])
    if kind == "number":
        return rng.choice([0, 0.5, -1, schema.get("minimum", 0)])
    if kind == "boolean":
        return rng.random() < 0.5
    if kind == "string":
        low = schema.get("minLength", 0)
        texts = ["", "a" * low, "a" * (low + 5), "a" * schema.get("maxLength", 64), "x" * 70000, *STRINGS]
        if "pattern" in schema and rng.random() < 0.8:
            texts = [t for t in texts if re.search(schema["pattern"], t)] or texts
        return rng.choice(texts)
    if kind == "null":
        return None
    return rng.choice(ODD)


#: The params schemas the MCP dispatcher checks with ``is_valid`` (``commonroom/mcp/dispatch.py``).
MCP_PARAMS = ["mcp#DiscoverParams", "mcp#ListParams", "mcp#ToolCallParams", "mcp#UriParams", "mcp#PromptGetParams"]
NAMES = sorted({op.input for op in OPERATIONS} | {"invitation", *MCP_PARAMS})


@pytest.mark.parametrize("name", NAMES)
def test_the_fast_path_agrees_with_the_source_schemas(name: str):
    rng = random.Random(name)
    fast, plain = schemas.fast_validator(name), schemas.validator(name)
    assert fast is not plain  # the bundled form is really in use
    schema = bundle(name)
    verdicts = {True: 0, False: 0}
    for _ in range(400):
        instance = draw(schema, rng)
        expected = next(plain.iter_errors(instance), None) is None
        assert fast.is_valid(instance) == expected, instance
        verdicts[expected] += 1
    assert verdicts[False] > 0  # the walk strays
    if schema.get("properties") or schema.get("required"):
        assert verdicts[True] > 0, name  # and often stays


@pytest.mark.parametrize("name", [n for n in NAMES if schemas.by_property(n) is not None])
def test_a_level_at_a_time_agrees_with_the_source_schemas(name: str):
    """Where ``by_property`` applies, the object's own keywords and each property's schema checked apart
    accept exactly what the source schema accepts (``is_valid`` takes that path for every dict)."""
    rng = random.Random("split " + name)
    plain = schemas.validator(name)
    top, properties = schemas.by_property(name)  # type: ignore[misc]
    schema = bundle(name)
    verdicts = {True: 0, False: 0}
    for _ in range(400):
        instance = draw(schema, rng)
        expected = next(plain.iter_errors(instance), None) is None
        if isinstance(instance, dict):
            split = top.is_valid(instance) and all(
                check.is_valid(instance[key]) for key, check in properties if key in instance)
            assert split == expected, instance
        assert schemas.is_valid(name, instance) == expected, instance
        verdicts[expected] += 1
    assert verdicts[False] > 0 and (verdicts[True] > 0 or not schema.get("properties"))


def test_a_level_at_a_time_applies_to_plain_objects_only():
    assert schemas.by_property("editing#LeaseIdInput") is not None  # a path parameter's input
    for name in NAMES:
        schema = bundle(name)
        if schemas.by_property(name) is not None:
            assert schema.get("type") == "object" or "properties" in schema
            assert not ({"anyOf", "oneOf", "allOf", "not", "if", "patternProperties", "$ref"} & set(schema))
            assert isinstance(schema.get("additionalProperties", True), bool)


def test_a_body_is_remembered_by_its_bytes_once_valid():
    """``source`` (a request body's exact JSON text) names a valid instance of any schema; an invalid one
    is never kept, and a body past the memo's size is checked every time."""
    name = "editing#LeaseIdInput"
    schemas._VALID.clear()
    assert schemas.is_valid(name, {"lease_id": "l_1"}, source=b'{"lease_id": "l_1"}')
    assert (name, b'{"lease_id": "l_1"}') in schemas._VALID
    for _ in range(2):
        assert not schemas.is_valid(name, {"lease_id": 7}, source=b'{"lease_id": 7}')
    long = "l_" + "x" * 2000
    assert schemas.is_valid(name, {"lease_id": long}, source=('{"lease_id": "%s"}' % long).encode())
    assert len(schemas._VALID) == 1


@pytest.mark.parametrize("name,remember", [(n, False) for n in NAMES if schemas._branching(n)]
                         + [(n, True) for n in MCP_PARAMS])
def test_remembered_answers_are_the_answers(name: str, remember: bool):
    """With the memo (``validate``; ``is_valid(remember=True)`` for MCP params), asked twice
    (cold then warm), the answers are the source schemas' answers."""
    rng = random.Random("memo " + name)
    plain = schemas.validator(name)
    schema = bundle(name)
    instances = [draw(schema, rng) for _ in range(300)]
    for _ in range(2):
        for instance in instances:
            expected = next(plain.iter_errors(instance), None) is None
            if remember:
                got = schemas.is_valid(name, instance, remember=True)
            else:
                try:
                    schemas.validate(name, instance)
                    got = True
                except schemas.InvalidRequest:
                    got = False
            assert got == expected, instance


def test_only_small_valid_instances_of_branching_schemas_are_remembered():
    name = "editing#LeaseRequest"
    schemas._VALID.clear()
    schemas.validate(name, {"region": {"lines": [3, 3]}})
    assert (name, '{"region":{"lines":[3,3]}}') in schemas._VALID
    for bad in ({"region": {"lines": [3.5, 3]}}, {"region": {"lines": [True, 3]}}, {"region": {"heading": []}}):
        for _ in range(2):  # refused each time: an invalid instance is never remembered
            with pytest.raises(schemas.InvalidRequest):
                schemas.validate(name, bad)
    assert len(schemas._VALID) == 1
    schemas.validate(name, {"region": {"lines": [3.0, 3]}})  # 3.0 is an integer to JSON Schema, and its own key
    assert len(schemas._VALID) == 2
    schemas.validate(name, {"region": {"heading": ["x" * 600]}})  # past the budget: checked, not kept
    schemas.validate("editing#LeaseIdInput", {"lease_id": "l_1"})  # no anyOf/oneOf: nothing to save
    assert len(schemas._VALID) == 2


def test_the_memo_is_bounded(monkeypatch):
    monkeypatch.setattr(schemas, "MEMO_SIZE", 3)
    schemas._VALID.clear()
    for line in range(1, 8):
        schemas.validate("editing#LeaseRequest", {"region": {"lines": [line, line]}})
        assert len(schemas._VALID) <= 3


def test_remember_keeps_small_valid_instances_of_any_schema():
    """``is_valid(..., remember=True)`` (an MCP request's params) remembers a valid instance of a plain schema too."""
    name = "editing#LeaseIdInput"
    schemas._VALID.clear()
    assert schemas.is_valid(name, {"lease_id": "l_1"}, remember=True)
    assert (name, '{"lease_id":"l_1"}') in schemas._VALID
    for _ in range(2):  # never an invalid one
        assert not schemas.is_valid(name, {"lease_id": 7}, remember=True)
    schemas.is_valid(name, {"lease_id": "l_" + "x" * 600}, remember=True)  # past the budget: not kept
    assert len(schemas._VALID) == 1
    assert schemas.is_valid(name, {"lease_id": "l_2"})  # without remember: checked, not kept
    assert len(schemas._VALID) == 1


def test_a_long_text_is_not_remembered():
    """The budget counts a number as 1: many long floats fit it, but their text is not kept."""
    schemas._VALID.clear()
    params = {"name": "document_read", "arguments": {"x": [0.1234567890123 + i for i in range(200)]},
              "_meta": {}}
    assert schemas.is_valid("mcp#ToolCallParams", params, remember=True)
    assert len(schemas._VALID) == 0
    assert schemas.is_valid("mcp#ToolCallParams", {"name": "document_read", "arguments": {}, "_meta": {}},
                            remember=True)
    assert len(schemas._VALID) == 1


def test_an_object_s_keys_are_remembered_where_they_alone_decide_its_own_keywords(monkeypatch):
    """A closed schema (``additionalProperties: false``, keywords that read only keys) remembers the keys a
    valid object had; its values are checked every time, and an open schema remembers nothing."""
    name = "editing#LeaseIdInput"
    schemas._VALID_KEYS.clear()
    assert schemas.is_valid(name, {"lease_id": "l_1"})
    assert schemas._VALID_KEYS == {(name, ("lease_id",)): None}
    assert not schemas.is_valid(name, {"lease_id": ""})  # same keys, a value its schema refuses
    assert not schemas.is_valid(name, {"lease_id": "l_1", "x": 1}) and not schemas.is_valid(name, {})
    assert len(schemas._VALID_KEYS) == 1
    open_names = [n for n in NAMES if schemas.by_property(n) is not None and not schemas._closed_by_keys(n)]
    for n in open_names:
        assert bundle(n).get("additionalProperties") is not False or not schemas._KEYS_ONLY.issuperset(bundle(n))
    monkeypatch.setattr(schemas, "MEMO_SIZE", 2)
    empty_ok = [n for n in NAMES if schemas._closed_by_keys(n) and schemas.validator(n).is_valid({})]
    assert len(empty_ok) >= 3
    for n in empty_ok:
        assert schemas.is_valid(n, {})
        assert 1 <= len(schemas._VALID_KEYS) <= 2
