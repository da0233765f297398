"""The wire schemas (``schema/*.json``) and validators built from them.

:func:`~commonroom.schemafiles.load_all` reads the schema files (every
reader goes through it: validation here, :mod:`commonroom.bundle`,
``http/openapi.py``, the tests); it is re-exported here.

``validate(name, instance)`` checks a request body at the boundary and raises
:class:`~commonroom.errors.InvalidRequest` naming the JSON pointer that
failed. ``name`` is ``"<file>"`` for a whole file (``"invitation"``) or
``"<file>#<Def>"`` for one of its ``$defs`` (``"join#JoinRequest"``).
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from typing import Any

from jsonschema import Draft202012Validator, validators
from jsonschema.exceptions import ValidationError, best_match
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

from .bundle import bundle
from .errors import InvalidRequest
from .schemafiles import load_all

BASE = "https://commonroom.invalid/schema/"


@lru_cache(maxsize=1)
def registry() -> Registry:
    """All schema files, addressable as ``BASE + file name``."""
    resources = [
        (BASE + name, Resource.from_contents(schema, default_specification=DRAFT202012))
        for name, schema in load_all().items()
    ]
    return Registry().with_resources(resources)


def _uri(name: str) -> str:
    file, _, definition = name.partition("#")
    uri = BASE + (file if file.endswith(".json") else file + ".json")
    return uri + (f"#/$defs/{definition}" if definition else "")


@lru_cache(maxsize=None)
def validator(name: str) -> Draft202012Validator:
    """A compiled validator for ``name`` (see module docstring); KeyError if unknown."""
    file = name.partition("#")[0]
    if (file if file.endswith(".json") else file + ".json") not in load_all():
        raise KeyError(name)
    return Draft202012Validator({"$ref": _uri(name)}, registry=registry())


def _valid_under(validator: Any, instance: Any, subschema: Any) -> bool:
    """Whether ``instance`` is valid under ``subschema`` (stops at the first error, builds no others)."""
    return next(validator.descend(instance, subschema), None) is None


def _any_of(validator: Any, any_of: list[Any], instance: Any, schema: Any) -> Any:
    """``anyOf`` for a yes/no answer: valid under at least one subschema."""
    if not any(_valid_under(validator, instance, sub) for sub in any_of):
        yield ValidationError(f"{instance!r} is not valid under any of the given schemas")


def _one_of(validator: Any, one_of: list[Any], instance: Any, schema: Any) -> Any:
    """``oneOf`` for a yes/no answer: valid under exactly one subschema."""
    matched = 0
    for sub in one_of:
        if _valid_under(validator, instance, sub):
            matched += 1
            if matched > 1:
                break
    if matched != 1:
        yield ValidationError(f"{instance!r} is not valid under exactly one of the given schemas")


#: Draft 2020-12 whose ``anyOf``/``oneOf`` decide validity without collecting every
#: failing branch's errors (jsonschema's own keep them all for the message). Same
#: answer to ``is_valid``; its errors are never shown (:func:`validate` asks
#: :func:`validator` for those). Extended through jsonschema's documented
#: ``validators.extend``.
_YesNoValidator: Any = validators.extend(Draft202012Validator, {"anyOf": _any_of, "oneOf": _one_of})


@lru_cache(maxsize=None)
def fast_validator(name: str) -> Draft202012Validator:
    """A validator for ``name`` over its bundled form (every ``$ref`` inlined, ``commonroom.bundle``).

    It accepts exactly what :func:`validator` accepts (the bundle is the same
    schema, checked by ``tests/unit/test_schemas_fast.py``) at about half the
    cost: following a ``$ref`` through the registry is most of a small
    schema's validation. :func:`validate` asks it first and turns to
    :func:`validator` only for the error of an invalid instance, so answers
    (message, pointer, ``schema_path``) stay those of the source schemas.
    KeyError if unknown; a recursive schema (none exists) gets the plain validator.
    """
    plain = validator(name)  # KeyError for an unknown name, as validator()
    try:
        return _YesNoValidator(bundle(name))
    except ValueError:  # a cycle: nothing to inline
        return plain


#: Keywords whose value holds subschemas, other than ``properties`` (:func:`by_property`).
_APPLICATORS = frozenset({"allOf", "anyOf", "oneOf", "not", "if", "then", "else", "dependentSchemas",
                          "patternProperties", "propertyNames", "unevaluatedProperties", "unevaluatedItems",
                          "items", "prefixItems", "contains", "$ref", "$dynamicRef"})


@lru_cache(maxsize=None)
def by_property(name: str) -> tuple[Draft202012Validator, tuple[tuple[str, Draft202012Validator], ...]] | None:
    """``name``'s bundled schema checked a level at a time, when that is the same check, else None.

    For an object schema whose only subschemas are its ``properties`` (no
    other applicator, a boolean ``additionalProperties``): a validator of
    the schema with each property's subschema replaced by ``true`` (type,
    ``required``, ``additionalProperties``, ...) and one validator per
    property, each over the property's value as its root. ``properties``
    applies each subschema to its property's value alone (JSON Schema
    2020-12, 10.3.2.1), so an instance passes the pair exactly when it passes
    the whole schema (``tests/unit/test_schemas_fast.py``), without
    jsonschema's descent into each property (most of a small input's cost).
    """
    schema = bundle(name)
    if not isinstance(schema, dict) or not isinstance(schema.get("properties"), dict) \
            or not _APPLICATORS.isdisjoint(schema) or not isinstance(schema.get("additionalProperties", True), bool):
        return None
    top = _YesNoValidator({**schema, "properties": {key: True for key in schema["properties"]}})
    return top, tuple((key, _YesNoValidator(sub)) for key, sub in schema["properties"].items())


#: Keywords whose outcome on an object depends on its keys alone, once each property's subschema is
#: ``true`` (:func:`by_property`'s top), and the annotations, which assert nothing.
_KEYS_ONLY = frozenset({"type", "required", "properties", "additionalProperties", "minProperties", "maxProperties",
                        "dependentRequired", "title", "description", "$comment", "$id", "$schema", "$anchor",
                        "$defs", "default", "examples", "deprecated", "readOnly", "writeOnly"})
#: ``(schema name, keys in order)`` of objects whose keys :func:`by_property`'s top found valid.
_VALID_KEYS: dict[tuple[str, tuple[str, ...]], None] = {}


@lru_cache(maxsize=None)
def _closed_by_keys(name: str) -> bool:
    """Whether :func:`by_property`'s top of ``name`` judges an object by its keys alone, and admits only the
    schema's own properties (``additionalProperties: false``: so the keys it remembers are bounded)."""
    schema = bundle(name)
    return by_property(name) is not None and schema.get("additionalProperties") is False \
        and _KEYS_ONLY.issuperset(schema)


def _top_is_valid(name: str, top: Draft202012Validator, instance: dict[str, Any]) -> bool:
    """``top.is_valid(instance)``, remembered by the object's keys where only they decide (:func:`_closed_by_keys`):
    a request's property names repeat, its values (ids) do not."""
    if not _closed_by_keys(name):
        return top.is_valid(instance)
    key = (name, tuple(instance))
    if key in _VALID_KEYS:
        return True
    if not top.is_valid(instance):
        return False
    if len(_VALID_KEYS) >= MEMO_SIZE:
        _VALID_KEYS.clear()
    _VALID_KEYS[key] = None
    return True


def errors_of(name: str, instance: Any) -> list[str]:
    """Every failure as ``"<pointer>: <message>"`` (empty when valid)."""
    return [
        f"{_pointer(e.absolute_path)}: {e.message}"
        for e in validator(name).iter_errors(instance)
    ]


def _pointer(path: Any) -> str:
    parts = [str(p).replace("~", "~0").replace("/", "~1") for p in path]
    return "/" + "/".join(parts) if parts else ""


#: Most remembered valid instances (then the memo starts over).
MEMO_SIZE = 4096
#: Largest instance remembered: string characters plus one per value, counted before encoding.
MEMO_BUDGET = 512
#: Longest canonical JSON text remembered (so the memo holds at most MEMO_SIZE keys of this size).
MEMO_KEY_CHARS = 1024
#: The canonical JSON text of a memo key (keys sorted; one encoder, not one per call).
_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False)
#: ``(schema name, canonical JSON)`` of small instances found valid (:func:`validate`).
_VALID: dict[tuple[str, Any], None] = {}


@lru_cache(maxsize=None)
def _branching(name: str) -> bool:
    """Whether ``name``'s schema has an ``anyOf``/``oneOf`` (the checks that cost tens of µs)."""
    text = json.dumps(bundle(name))
    return '"anyOf"' in text or '"oneOf"' in text


def _fits(value: Any, budget: list[int]) -> bool:
    """Whether ``value`` counts at most ``budget[0]`` (strings by length, other values 1), spending it."""
    if isinstance(value, str):
        budget[0] -= len(value)
    elif isinstance(value, dict):
        budget[0] -= len(value)
        if budget[0] >= 0:
            for key, item in value.items():
                budget[0] -= len(key)
                if not _fits(item, budget):
                    return False
    elif isinstance(value, list):
        budget[0] -= len(value)
        if budget[0] >= 0:
            for item in value:
                if not _fits(item, budget):
                    return False
    else:
        budget[0] -= 1
    return budget[0] >= 0


def _memo_key(name: str, instance: Any, remember: bool = False) -> tuple[str, str] | None:
    """The memo key of a small instance of a branching schema (any schema with ``remember``), else None.

    Validity is a function of the schema and the instance alone, and the
    canonical JSON text (keys sorted) names the instance exactly (``1``,
    ``1.0`` and ``true`` stay apart); a region of a lease request is checked
    once, not at every acquire (~60 µs of jsonschema each).
    """
    if not (remember or _branching(name)) or not _fits(instance, [MEMO_BUDGET]):
        return None
    text = _CANONICAL.encode(instance)
    # the budget counts a number as 1; its text may be longer (245 floats: ~6,000 characters)
    return (name, text) if len(text) <= MEMO_KEY_CHARS else None


def is_valid(name: str, instance: Any, *, remember: bool = False, source: bytes | None = None) -> bool:
    """Whether ``instance`` is valid under ``name``, at the least cost: no error is built.

    Small instances of schemas with ``anyOf``/``oneOf`` (of any schema with
    ``remember``: for instances that repeat, as an MCP request's envelope)
    found valid are remembered (:func:`_memo_key`, at most :data:`MEMO_SIZE`);
    invalid ones never are. ``source``: the JSON text ``instance`` was parsed
    from, exactly (a request body): a valid one of at most
    :data:`MEMO_KEY_CHARS` bytes is remembered by its bytes, whatever the
    schema (a client repeats its bodies; no canonical text is made). Others
    are checked by :func:`by_property` when it applies, else
    :func:`fast_validator`.
    """
    if source is not None and len(source) <= MEMO_KEY_CHARS:
        key: tuple[str, Any] | None = (name, source)
    else:
        key = _memo_key(name, instance, remember)
    if key is not None and key in _VALID:
        return True
    split = by_property(name)
    if split is not None and isinstance(instance, dict):
        top, properties = split
        valid = _top_is_valid(name, top, instance) and all(
            check.is_valid(instance[key]) for key, check in properties if key in instance)
    else:
        valid = fast_validator(name).is_valid(instance)
    if not valid:
        return False
    if key is not None:
        if len(_VALID) >= MEMO_SIZE:
            _VALID.clear()
        _VALID[key] = None
    return True


def validate(name: str, instance: Any, source: bytes | None = None) -> Any:
    """Return ``instance`` if valid (:func:`is_valid`, ``source`` its JSON text if known); else raise
    ``InvalidRequest``.

    The error's ``details`` carry ``pointer`` (the JSON pointer into the body,
    ``""`` for the root), ``schema_path`` and ``reason``, from :func:`validator`
    (the source schemas).
    """
    if is_valid(name, instance, source=source):
        return instance
    error = best_match(validator(name).iter_errors(instance))
    if error is None:  # pragma: no cover - the two validators agree (tests/unit/test_schemas_fast.py)
        return instance
    pointer, reason = _pointer(error.absolute_path), _reason(error)
    raise InvalidRequest(
        f"request body is invalid at {pointer or '/'}: {reason}",
        details={
            "pointer": pointer,
            "schema_path": "/" + "/".join(str(p) for p in error.absolute_schema_path),
            "reason": reason,
        },
    )


def _reason(error: Any) -> str:
    """jsonschema's message for ``error``, a closed list's values as JSON words (``"x" is not one of: a, b``),
    not Python's list of their reprs."""
    if error.validator == "enum" and isinstance(error.validator_value, list):
        return f"{json.dumps(error.instance, ensure_ascii=False)} is not one of: " + \
            ", ".join(str(v) for v in error.validator_value)
    return error.message


_REQUIRED = re.compile(r"^'([^']+)' is a required property$")


def validate_parameters(name: str, instance: dict[str, Any], parameters: dict[str, str],
                        source: bytes | None = None) -> dict[str, Any]:
    """:func:`validate`, with a failure at one of ``parameters`` reported as that parameter's.

    ``parameters`` maps an input property to the name its caller gave it
    (an HTTP path or query parameter, a ``ce`` argument). A failure at one
    of them (its pointer, or a missing required one) raises
    ``InvalidRequest("parameter <name> is invalid: <reason>")`` with
    ``details`` ``{"parameter", "reason"}``; any other is :func:`validate`'s.
    ``source``: the JSON text ``instance`` is, exactly (:func:`is_valid`).
    """
    try:
        return validate(name, instance, source)
    except InvalidRequest as exc:
        pointer = exc.details.get("pointer", "")
        prop = pointer.split("/")[1] if pointer.count("/") >= 1 and pointer else None
        if prop is None:
            missing = _REQUIRED.match(exc.details.get("reason", ""))
            prop = missing.group(1) if missing else None
        if prop not in parameters:
            raise
        wire, reason = parameters[prop], exc.details.get("reason", "")
        raise InvalidRequest(f"parameter {wire} is invalid: {reason}",
                             details={"parameter": wire, "reason": reason}) from None
