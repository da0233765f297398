"""The schema pipeline: ``python -m codegen --check`` and a round trip of every type.

- ``--check`` passes on the tree, and fails (exit 1, naming the files) when a
  copy of ``schema/`` is changed, a schema is added, or a generated file is
  edited or removed. An untouched copy passes (so the failures are real).
- Every module under ``commonroom.generated.types`` imports, and every top-level shape
  of every schema file (the file itself when it describes a value, and each of
  its ``$defs``) validates a synthesised sample with both its generated
  ``TypedDict`` (checked at run time by pydantic, strictly) and
  ``commonroom.schemas``; the sample comes back unchanged, and both sides
  refuse an unexpected property where the schema forbids one.
"""

from __future__ import annotations

import importlib
import json
import pkgutil
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pydantic
import pytest
import typing_extensions

import commonroom.generated.types
from commonroom import schemas

ROOT = Path(__file__).resolve().parents[2]
SCHEMA_DIR = ROOT / "schema"
GENERATED_DIR = ROOT / "generated"

# ---------------------------------------------------------------- --check


def run_check(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "codegen", "--check", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)


@pytest.fixture
def tree_copy(tmp_path: Path) -> Path:
    """A copy of schema/ and generated/ (without caches) to break on purpose."""
    shutil.copytree(SCHEMA_DIR, tmp_path / "schema")
    shutil.copytree(GENERATED_DIR, tmp_path / "generated", ignore=shutil.ignore_patterns("__pycache__"))
    return tmp_path


def check_copy(copy: Path) -> subprocess.CompletedProcess:
    return run_check("--schema", str(copy / "schema"), "--out", str(copy / "generated"))


def test_check_passes_on_the_tree():
    done = run_check()
    assert done.returncode == 0, done.stderr
    assert "matches" in done.stdout


def test_check_passes_on_an_untouched_copy(tree_copy):
    done = check_copy(tree_copy)
    assert done.returncode == 0, done.stderr


def test_check_fails_when_a_schema_is_touched(tree_copy):
    path = tree_copy / "schema" / "room.json"
    schema = json.loads(path.read_text("utf-8"))
    schema["$defs"]["RoomStatus"]["properties"]["file_name"]["description"] = "touched"
    path.write_text(json.dumps(schema, indent=2), "utf-8")
    done = check_copy(tree_copy)
    assert done.returncode == 1
    assert "types/room.py" in done.stderr
    assert "types/common.py" not in done.stderr
    assert not list((tree_copy / "generated").rglob("*.tmp")), "--check must write nothing"


def test_check_fails_when_a_schema_is_added(tree_copy):
    (tree_copy / "schema" / "extra.json").write_text(json.dumps({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "Extra", "type": "object", "properties": {"x": {"type": "integer"}},
    }), "utf-8")
    done = check_copy(tree_copy)
    assert done.returncode == 1
    assert "types/extra.py" in done.stderr


def test_check_fails_when_a_generated_file_is_edited(tree_copy):
    module = tree_copy / "generated" / "types" / "join.py"
    module.write_text(module.read_text("utf-8") + "\n# hand edit\n", "utf-8")
    done = check_copy(tree_copy)
    assert done.returncode == 1
    assert "types/join.py" in done.stderr


def test_check_fails_when_a_generated_file_is_missing(tree_copy):
    (tree_copy / "generated" / "types" / "error.py").unlink()
    done = check_copy(tree_copy)
    assert done.returncode == 1
    assert "error.py" in done.stderr


def test_check_does_not_modify_the_tree(tree_copy):
    path = tree_copy / "schema" / "join.json"
    path.write_text(path.read_text("utf-8").replace("Free text", "Some text"), "utf-8")
    before = {p: p.read_bytes() for p in (tree_copy / "generated").rglob("*.py")}
    check_copy(tree_copy)
    after = {p: p.read_bytes() for p in (tree_copy / "generated").rglob("*.py")}
    assert before == after


def test_codegen_itself_imports_nothing_of_the_package():
    """The types come from schema/ alone; only the child that writes help, routes and docs imports commonroom."""
    probe = ("import runpy, sys; sys.modules['commonroom'] = None; sys.argv = ['codegen', '--check'];"
             "runpy.run_module('codegen', run_name='__main__', alter_sys=True)")
    done = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "matches" in done.stdout


def test_codegen_writes_a_type_the_engine_already_imports(tmp_path):
    """In a copy of the tree whose engine imports a generated module that is missing (as when the engine
    uses a type the schema has only just gained), ``python -m codegen`` writes it and then the rest."""
    copy = tmp_path / "tree"
    for name in ("commonroom", "codegen", "schema", "generated", "docs"):
        shutil.copytree(ROOT / name, copy / name, symlinks=True, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "README.md", copy / "README.md")
    module = copy / "generated" / "types" / "handoffs.py"
    module.unlink()
    broken = subprocess.run([sys.executable, "-c", "import commonroom.engine"], cwd=copy, capture_output=True,
                            text=True, timeout=60)
    assert broken.returncode != 0 and "handoffs" in broken.stderr, "the copy's engine should not import"
    done = subprocess.run([sys.executable, "-m", "codegen"], cwd=copy, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert module.read_bytes() == (GENERATED_DIR / "types" / "handoffs.py").read_bytes()
    assert (copy / "commonroom" / "cli" / "routes.json").read_bytes() == \
        (ROOT / "commonroom" / "cli" / "routes.json").read_bytes()


# ------------------------------------------------------------- round trip

#: Example strings for the patterns our schemas use.
PATTERN_EXAMPLES = [
    "2026-01-02T03:04:05.123456+00:00",
    "sha256:" + "0" * 64,
    "x",
]


def _from_regex(parsed: Any) -> str:
    """The shortest string a parsed regex (``re._parser``) matches, for simple patterns."""
    out = []
    for op, arg in parsed:
        name = str(op)
        if name == "LITERAL":
            out.append(chr(arg))
        elif name == "NOT_LITERAL":
            out.append("a" if chr(arg) != "a" else "b")
        elif name == "ANY":
            out.append("x")
        elif name == "IN":
            out.append(_from_class(arg))
        elif name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
            low, _high, item = arg
            out.append(_from_regex(item) * low)
        elif name == "SUBPATTERN":
            out.append(_from_regex(arg[-1]))
        elif name == "BRANCH":
            out.append(_from_regex(arg[1][0]))
        elif name == "CATEGORY":
            out.append(_from_class([(op, arg)]))
        elif name == "AT":
            continue
        else:
            raise ValueError(f"regex construct {name} not supported")
    return "".join(out)


def _from_class(items: Any) -> str:
    for op, arg in items:
        name = str(op)
        if name == "LITERAL":
            return chr(arg)
        if name == "RANGE":
            return chr(arg[0])
        if name == "CATEGORY":
            return {"CATEGORY_DIGIT": "0", "CATEGORY_SPACE": " "}.get(str(arg), "a")
    raise ValueError("negated or empty character class")


def _pattern_example(pattern: str, min_length: int) -> str:
    candidates = list(PATTERN_EXAMPLES)
    try:
        candidates.append(_from_regex(re._parser.parse(pattern)))  # type: ignore[attr-defined]
    except (ValueError, AttributeError):
        pass
    for candidate in candidates:
        if re.search(pattern, candidate) and len(candidate) >= min_length:
            return candidate
    pytest.fail(f"no example string for pattern {pattern!r}: add one to PATTERN_EXAMPLES "
                f"in tests/unit/test_codegen.py, or give the schema an 'examples' list")


def synthesise(schema: Any, resolver: Any, *, full: bool, seed: int = 0) -> Any:
    """A value valid under ``schema``: required parts only, or every property (``full``)."""
    if schema is True or schema == {} or not isinstance(schema, dict):
        return {"any": "value"}
    if "$ref" in schema:
        resolved = resolver.lookup(schema["$ref"])
        extra = {k: v for k, v in schema.items() if k not in ("$ref", "description", "title")}
        # Keywords beside a $ref (``"minItems": 1``) narrow the target: merge them in.
        target = {**resolved.contents, **extra} if extra else resolved.contents
        return synthesise(target, resolved.resolver, full=full, seed=seed)
    if "examples" in schema:
        return schema["examples"][0]
    if "const" in schema:
        return schema["const"]
    if "enum" in schema:
        return schema["enum"][seed % len(schema["enum"])]
    for key in ("oneOf", "anyOf"):
        if key in schema:
            options = [o for o in schema[key] if o.get("type") != "null"] or schema[key]
            return synthesise(options[0], resolver, full=full, seed=seed)
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), kind[0])
    if kind is None:
        kind = "object" if ("properties" in schema or "required" in schema) else (
            "array" if "items" in schema else None)
    if kind is None:
        return {"any": "value"}
    if kind == "object":
        props = schema.get("properties", {})
        keys = list(schema.get("required", []))
        optional = [k for k in props if k not in keys]
        if full:
            keys += optional
        while len(keys) < schema.get("minProperties", 0) and optional:
            keys.append(optional.pop(0))
        if "maxProperties" in schema:
            keys = keys[: max(schema["maxProperties"], len(schema.get("required", [])))]
        return {k: synthesise(props.get(k, {}), resolver, full=full, seed=i) for i, k in enumerate(keys)}
    if kind == "array":
        count = max(schema.get("minItems", 0), 1 if full else 0)
        count = min(count, schema.get("maxItems", count))
        return [synthesise(schema.get("items", {}), resolver, full=full, seed=i) for i in range(count)]
    if kind == "string":
        min_length = schema.get("minLength", 0)
        if "pattern" in schema:
            return _pattern_example(schema["pattern"], min_length)
        if schema.get("format") == "date-time":
            return PATTERN_EXAMPLES[0]
        text = f"s{seed}"
        return text + "x" * max(0, min_length - len(text))
    if kind in ("integer", "number"):
        low = schema.get("minimum", schema.get("exclusiveMinimum", -1) + 1 if "exclusiveMinimum" in schema else 0)
        value = low + seed
        if "maximum" in schema:
            value = min(value, schema["maximum"])
        return value
    if kind == "boolean":
        return True
    if kind == "null":
        return None
    pytest.fail(f"cannot synthesise a value of type {kind!r}")


def _describes_a_value(schema: dict) -> bool:
    return any(k in schema for k in ("type", "$ref", "properties", "oneOf", "anyOf", "allOf", "enum", "const"))


def _class_name(text: str) -> str:
    return re.sub(r"[^0-9A-Za-z_]", "", text[:1].upper() + text[1:])


def shapes() -> list[tuple[str, str | None]]:
    """``(file, def)`` for every top-level shape of every schema file (def None: the file)."""
    out: list[tuple[str, str | None]] = []
    for file, schema in schemas.load_all().items():
        if _describes_a_value(schema):
            out.append((file, None))
        out.extend((file, name) for name in schema.get("$defs", {}))
    return out


def type_for(file: str, definition: str | None) -> Any:
    module = importlib.import_module("commonroom.generated.types." + Path(file).stem.replace("-", "_"))
    if definition is None:
        name = _class_name(schemas.load_all()[file].get("title", Path(file).stem))
    else:
        name = _class_name(definition)
    value = getattr(module, name, None)
    assert value is not None, f"{module.__name__} has no type {name} for {file}#{definition}"
    return value


def test_every_generated_type_module_imports():
    names = [m.name for m in pkgutil.iter_modules(commonroom.generated.types.__path__)]
    stems = sorted(p.stem.replace("-", "_") for p in SCHEMA_DIR.glob("*.json"))
    assert sorted(names) == stems, "one type module per schema file"
    assert sorted(Path(f).stem.replace("-", "_") for f in schemas.load_all()) == stems
    for name in names:
        module = importlib.import_module(f"commonroom.generated.types.{name}")
        assert any(typing_extensions.is_typeddict(v) for v in vars(module).values()), name


@pytest.mark.parametrize("full", [False, True], ids=["required", "full"])
@pytest.mark.parametrize("file, definition", shapes(), ids=lambda v: str(v))
def test_round_trip(file, definition, full):
    name = file.removesuffix(".json") + (f"#{definition}" if definition else "")
    uri = schemas.BASE + file
    resolver = schemas.registry().resolver(base_uri=uri)
    schema = resolver.lookup(uri + (f"#/$defs/{definition}" if definition else "")).contents
    sample = synthesise(schema, resolver.lookup(uri).resolver, full=full)

    assert schemas.errors_of(name, sample) == [], f"synthesised sample for {name}: {sample!r}"
    schemas.validate(name, sample)

    adapter = pydantic.TypeAdapter(type_for(file, definition))
    value = adapter.validate_python(sample, strict=True)
    dumped = adapter.dump_python(value, mode="json", by_alias=True, exclude_unset=True)
    assert dumped == sample
    assert schemas.errors_of(name, dumped) == []

    if isinstance(sample, dict) and schemas.errors_of(name, {**sample, "zz_unexpected": 1}):
        with pytest.raises(pydantic.ValidationError):
            adapter.validate_python({**sample, "zz_unexpected": 1}, strict=True)
    if isinstance(sample, dict):
        assert schemas.errors_of(name, [sample])
        with pytest.raises(pydantic.ValidationError):
            adapter.validate_python([sample], strict=True)


def test_round_trip_covers_the_foundation_shapes():
    """The issue's shapes are among those checked (the list cannot silently shrink)."""
    covered = {f"{f}#{d}" if d else f for f, d in shapes()}
    for shape in ["invitation.json", "transport.json", "error.json", "join.json#JoinRequest",
                  "join.json#JoinResult", "common.json#Session", "common.json#Participant",
                  "room.json#RoomStatus", "room.json#Document", "room.json#ParticipantsPage"]:
        assert shape in covered


def test_types_and_validators_agree_on_a_wrong_type():
    """A type cannot carry a pattern (a bad timestamp is the validator's alone), but a wrong type is caught by both."""
    bad = {"id": "p_1", "name": 7, "created_at": "2026-01-02T03:04:05.123456+00:00"}
    assert schemas.errors_of("common#Participant", bad)
    with pytest.raises(pydantic.ValidationError):
        pydantic.TypeAdapter(type_for("common.json", "Participant")).validate_python(bad, strict=True)
