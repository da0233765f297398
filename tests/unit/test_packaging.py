"""The built wheel holds the whole product: every module, ``schema/*.json`` and the stored ``ce --help`` as package data.

``pyproject.toml`` lists its packages (the top-level ``schema/`` directory is
mapped onto ``commonroom.schema``), so a package added without being listed
would silently be missing from a regular install; this builds a wheel with
``pip wheel`` from a copy of the tree and compares. The wheel, unpacked and
imported ahead of the checkout, reads the same schemas through
``commonroom.schemafiles.load_all``.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from commonroom.schemas import load_all

ROOT = Path(__file__).resolve().parents[2]
SOURCES = ("pyproject.toml", "README.md", "commonroom", "generated", "schema")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tree = tmp_path_factory.mktemp("tree")
    for name in SOURCES:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, tree / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copy(source, tree / name)
    out = tmp_path_factory.mktemp("wheel")
    done = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(out), str(tree)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    (built,) = out.glob("commonroom-*.whl")
    return built


def expected_files() -> set[str]:
    out = {f"commonroom/schema/{p.name}" for p in (ROOT / "schema").iterdir() if p.suffix in (".json", ".py")}
    for top in ("commonroom", "generated"):
        out |= {p.relative_to(ROOT).as_posix() for p in (ROOT / top).rglob("*.py")}
    out |= {p.relative_to(ROOT).as_posix() for p in (ROOT / "commonroom" / "skills").rglob("*") if p.is_file()}
    out.add("commonroom/cli/help.txt")  # what `ce --help` prints (commonroom/cli/entry.py)
    out.add("commonroom/cli/fast.json")  # the options `ce read` parses without Typer (commonroom/cli/quickread.py)
    return out


def test_the_wheel_holds_every_module_and_schema_file(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
        missing = sorted(expected_files() - names)
        assert not missing, f"not in the wheel (list the package in pyproject.toml?): {missing}"
        for path in (ROOT / "schema").glob("*.json"):
            assert zf.read(f"commonroom/schema/{path.name}") == path.read_bytes()
        for stored in ("help.txt", "fast.json"):
            assert zf.read(f"commonroom/cli/{stored}") == (ROOT / "commonroom" / "cli" / stored).read_bytes()
        entry_points = next(n for n in names if n.endswith(".dist-info/entry_points.txt"))
        assert "ce = commonroom.cli.entry:main" in zf.read(entry_points).decode("utf-8")
    assert not any(n.startswith(("schema/", "tests/", "codegen/")) for n in names)


def test_the_installed_package_reads_its_schemas(wheel: Path, tmp_path: Path) -> None:
    site = tmp_path / "site"
    with zipfile.ZipFile(wheel) as zf:
        zf.extractall(site)
    probe = ("import json, commonroom.schemafiles as s, commonroom.cli.entry as e, commonroom.cli.quickread as f;"
             "print(json.dumps({'file': s.__file__, 'data': str(s.files(s.PACKAGE)), 'schemas': s.load_all(),"
             " 'entry': e.__file__, 'help': e.stored_help(), 'fast': f.load_spec()}))")
    done = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, capture_output=True, text=True,
                          timeout=60, env={"PYTHONPATH": str(site), "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    assert seen["file"].startswith(str(site)) and seen["data"].startswith(str(site))
    assert seen["schemas"] == load_all()
    assert sorted(seen["schemas"]) == sorted(p.name for p in (ROOT / "schema").glob("*.json"))
    assert seen["entry"].startswith(str(site))
    assert seen["help"] == (ROOT / "commonroom" / "cli" / "help.txt").read_text("utf-8")
    assert seen["fast"] == json.loads((ROOT / "commonroom" / "cli" / "fast.json").read_text("utf-8"))
