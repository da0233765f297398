"""The import layers hold: import-linter's contracts (``[tool.importlinter]`` in ``pyproject.toml``) and no cycle.

The contracts say, over the whole import graph of ``commonroom`` (imports
inside functions and under ``TYPE_CHECKING`` included, as grimp reads them):
``ce`` above the room process, the room above its front door (``front/``)
and adapters (``http/`` and ``mcp/``, independent of each other), the adapters above ``live/`` and the
operation table, those above the engine, the engine above the store; the
engine imports no adapter, client or room process (nor falcon, gunicorn,
Typer, click or Rich); no package has an import cycle among its modules.
:func:`test_no_module_is_in_an_import_cycle` also counts cycles module by
module with grimp (import-linter's graph library). Run them by hand with
``lint-imports`` from the repository root.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tomllib
from importlib.metadata import version
from pathlib import Path

import grimp

ROOT = Path(__file__).resolve().parents[2]
CONFIG = ROOT / "pyproject.toml"
#: The contracts docs/architecture.md describes, by id.
CONTRACTS = {"layers": "layers", "engine-alone": "forbidden", "adapters-apart": "independence",
             "no-cycles": "acyclic_siblings"}


def lint_imports(config: Path, cwd: Path, pythonpath: Path) -> subprocess.CompletedProcess[str]:
    """``lint-imports`` (the one installed beside this interpreter) over ``config``, no cache."""
    script = Path(sys.executable).with_name("lint-imports")
    return subprocess.run([str(script), str(config), "--no-cache"], cwd=cwd, capture_output=True,
                          text=True, timeout=300, env={"PYTHONPATH": str(pythonpath), "PATH": "/usr/bin:/bin"})


def cycles(package: str) -> list[list[str]]:
    """Every import cycle among ``package``'s modules: the strongly connected components of more than one."""
    graph = grimp.build_graph(package)
    edges = {m: sorted(graph.find_modules_directly_imported_by(m)) for m in sorted(graph.modules)}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []
    for root in edges:  # Tarjan's algorithm, iterative (a deep graph needs no recursion limit)
        if root in index:
            continue
        work = [(root, iter(edges[root]))]
        index[root] = low[root] = len(index)
        stack.append(root)
        while work:
            node, successors = work[-1]
            for succ in successors:
                if succ not in index:
                    index[succ] = low[succ] = len(index)
                    stack.append(succ)
                    work.append((succ, iter(edges[succ])))
                    break
                if succ in stack:
                    low[node] = min(low[node], index[succ])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return found


def test_the_pinned_import_linter_is_the_one_installed() -> None:
    extra = tomllib.loads(CONFIG.read_text("utf-8"))["project"]["optional-dependencies"]["test"]
    pinned = [m.group(1) for m in (re.fullmatch(r"import-linter==(\S+)", spec) for spec in extra) if m]
    assert pinned == [version("import-linter")]


def test_the_contracts_are_the_documented_ones() -> None:
    config = tomllib.loads(CONFIG.read_text("utf-8"))["tool"]["importlinter"]
    assert config["root_package"] == "commonroom"
    assert {c["id"]: c["type"] for c in config["contracts"]} == CONTRACTS
    layers = next(c for c in config["contracts"] if c["id"] == "layers")["layers"]
    assert layers.index("commonroom.http | commonroom.mcp") < layers.index("commonroom.engine")


def test_every_import_contract_is_kept() -> None:
    done = lint_imports(CONFIG, ROOT, ROOT)
    assert done.returncode == 0, f"import-linter {version('import-linter')}:\n{done.stdout}{done.stderr}"
    assert f"Contracts: {len(CONTRACTS)} kept, 0 broken." in done.stdout


def test_no_module_is_in_an_import_cycle() -> None:
    assert cycles("commonroom") == []


def test_the_contracts_break_when_the_engine_imports_an_adapter(tmp_path: Path) -> None:
    """The same contracts over a copy of the package whose engine imports ``http/`` (which imports the engine)."""
    shutil.copytree(ROOT / "commonroom", tmp_path / "commonroom", ignore=shutil.ignore_patterns("__pycache__"))
    actor = tmp_path / "commonroom" / "engine" / "actor.py"
    actor.write_text(actor.read_text("utf-8") + "\nfrom ..http import answers  # noqa: E402,F401\n", "utf-8")
    done = lint_imports(CONFIG, tmp_path, tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "Contracts: 0 kept, 4 broken." in done.stdout, done.stdout  # mcp -> engine -> http: not independent
    assert "commonroom.engine is not allowed to import commonroom.http" in done.stdout
    assert "No cycles are allowed in commonroom." in done.stdout
