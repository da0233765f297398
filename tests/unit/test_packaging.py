"""The built wheel holds the whole product, and nothing beside it.

Every module, ``schema/*.json``, the generated types, the stored ``ce --help``
and the package data (skills, console) are in it; it installs no top-level
name but ``commonroom`` (the top-level ``generated/`` directory installs as
``commonroom.generated``, ``schema/`` as ``commonroom.schema``), and setuptools
builds it without a warning. ``pyproject.toml`` lists its packages, so a
package added without being listed would silently be missing from a regular
install; this builds a wheel with ``pip wheel`` from a copy of the tree and
compares. The wheel, unpacked and imported ahead of the checkout, reads the
same schemas through ``commonroom.schemafiles.load_all``.
"""

from __future__ import annotations

import json
import re
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
def build(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """The wheel built from a copy of the tree (symlinks kept, as a checkout has them), and the build's log."""
    tree = tmp_path_factory.mktemp("tree")
    for name in SOURCES:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, tree / name, symlinks=True, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copy(source, tree / name)
    out = tmp_path_factory.mktemp("wheel")
    done = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-v", "-w", str(out), str(tree)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    (built,) = out.glob("commonroom-*.whl")
    return built, done.stdout + done.stderr


@pytest.fixture(scope="module")
def wheel(build: tuple[Path, str]) -> Path:
    return build[0]


def expected_files() -> set[str]:
    out = {f"commonroom/schema/{p.name}" for p in (ROOT / "schema").iterdir() if p.suffix in (".json", ".py")}
    out |= {p.relative_to(ROOT).as_posix() for p in (ROOT / "commonroom").rglob("*.py")}
    out |= {f"commonroom/{p.relative_to(ROOT).as_posix()}" for p in (ROOT / "generated").rglob("*.py")}
    for data in ("skills", "static"):
        out |= {p.relative_to(ROOT).as_posix() for p in (ROOT / "commonroom" / data).rglob("*") if p.is_file()}
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


def test_the_wheel_installs_nothing_beside_commonroom(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
        tops = {n.split("/", 1)[0] for n in names}
        top_level = next(n for n in names if n.endswith(".dist-info/top_level.txt"))
        declared = zf.read(top_level).decode("utf-8").split()
    assert {t for t in tops if not t.endswith(".dist-info")} == {"commonroom"}, sorted(tops)
    assert declared == ["commonroom"]


def test_setuptools_builds_the_wheel_without_a_warning(build: tuple[Path, str]) -> None:
    # setuptools' own warnings are Warning classes (_Warning, SetuptoolsDeprecationWarning, ...);
    # pip's "WARNING: Location ..." lines about the local index and distutils' lowercase
    # "warning: ... byte-compiling is disabled" are not about this project's configuration.
    warnings = [line.strip() for line in build[1].splitlines() if re.search(r"\w*Warning\b", line)]
    assert not warnings, ("setuptools warned (a directory of package data missing from [tool.setuptools] "
                          "packages?):\n" + "\n".join(warnings))


def test_the_installed_package_reads_its_schemas(wheel: Path, tmp_path: Path) -> None:
    site = tmp_path / "site"
    with zipfile.ZipFile(wheel) as zf:
        zf.extractall(site)
    probe = ("import json, commonroom.schemafiles as s, commonroom.cli.entry as e, commonroom.cli.quickread as f;"
             "import commonroom.engine.proposals as p, commonroom.generated.types.editing as g;"
             "print(json.dumps({'file': s.__file__, 'data': str(s.files(s.PACKAGE)), 'schemas': s.load_all(),"
             " 'entry': e.__file__, 'help': e.stored_help(), 'fast': f.load_spec(),"
             " 'engine': p.__file__, 'generated': g.__file__}))")
    done = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, capture_output=True, text=True,
                          timeout=60, env={"PYTHONPATH": str(site), "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    assert seen["file"].startswith(str(site)) and seen["data"].startswith(str(site))
    assert seen["schemas"] == load_all()
    assert sorted(seen["schemas"]) == sorted(p.name for p in (ROOT / "schema").glob("*.json"))
    assert seen["entry"].startswith(str(site))
    assert seen["engine"].startswith(str(site)) and seen["generated"] == str(site / "commonroom/generated/types/editing.py")
    assert seen["help"] == (ROOT / "commonroom" / "cli" / "help.txt").read_text("utf-8")
    assert seen["fast"] == json.loads((ROOT / "commonroom" / "cli" / "fast.json").read_text("utf-8"))


def test_no_source_imports_generated_as_a_top_level_package() -> None:
    # From a checkout, the repository root on sys.path would still let `import generated` work;
    # an installed wheel has only commonroom.generated.
    pattern = re.compile(r"^\s*(from|import)\s+generated\b", re.M)
    found = [p.relative_to(ROOT).as_posix() for top in ("commonroom", "tests", "codegen")
             for p in (ROOT / top).rglob("*.py") if pattern.search(p.read_text("utf-8"))]
    assert not found, f"import commonroom.generated, not generated: {found}"
