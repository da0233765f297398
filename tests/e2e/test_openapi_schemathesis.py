"""The published OpenAPI documents are the truth: schemathesis against a real room.

Both documents (ingress with a session holding every capability, owner
port with the owner token) are run with all of schemathesis's checks
(every phase: examples, coverage, fuzzing, stateful) against one real
room process. In the suite the run is bounded (about a minute per
listener, at least 2,000 requests in all; one worker: hypothesis's lambda
descriptions are not thread-safe on Python 3.11); ``COMMONROOM_RELEASE=1`` runs
each listener for ``COMMONROOM_SCHEMATHESIS_SECONDS`` (default 600) and
prints the figures.

The configuration is derived from the operation table: an operation
whose declaration lists a 400 error of its own (``invalid_region``, or
``invalid_request`` for a cursor the room did not issue, a broken
invitation, or a value the schema cannot bound) may answer 400 to
schema-valid input, so ``positive_data_acceptance`` expects 400 there and
nowhere else. A state that does not allow the transition is 409 with the
record's conflict code (docs/protocol.md, *409 or 400*), never 400. ``/workspace/observe`` is an endless event
stream; the live tests cover it.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from commonroom.errors import STATUS
from commonroom.operations import INGRESS, OPERATIONS, OWNER
from tests.roomproc import start_room

ROOT = Path(__file__).resolve().parents[2]
RELEASE = os.environ.get("COMMONROOM_RELEASE") == "1"
SECONDS = int(os.environ.get("COMMONROOM_SCHEMATHESIS_SECONDS", "600")) if RELEASE else 60
ALL = ["read", "observe", "propose", "lease", "approve", "write", "handoff", "message"]


def config(listener: str) -> str:
    """schemathesis.toml for ``listener``, derived from the declarations.

    An operation that declares a 400 of its own may answer 400 to
    schema-valid input; one that declares a 5xx code of the seeds
    (``transport_unavailable`` 503) may answer it. Nothing else is relaxed.
    """
    blocks = [
        # a request too long for the server is rejected too: 414 / 431 (commonroom/worker.py)
        "[checks.negative_data_rejection]\n"
        "expected-statuses = [400, 401, 403, 404, 405, 406, 409, 413, 414, 415, 422, 428, 429, 431]\n",
        "[checks.positive_data_acceptance]\n"
        'expected-statuses = ["2xx", 401, 403, 404, 409, 429]\n',
        # /mcp is JSON-RPC: a well-formed envelope can still carry unknown params
        # (400) or miss the MCP headers; GET is 405 unless a stream is asked for.
        "[[operations]]\n"
        'include-operation-id = ["mcp_post", "mcp_stream"]\n'
        'checks.positive_data_acceptance.expected-statuses = ["2xx", 400, 401, 403, 404, 405, 429]\n',
    ]
    for op in OPERATIONS.http(listener):
        statuses = sorted({STATUS[code] for code in op.errors})
        own_400 = 400 in statuses
        server = [s for s in statuses if s >= 500]
        if not own_400 and not server:
            continue
        accepted = ["2xx", 401, 403, 404, 409, 429] + ([400] if own_400 else []) + server
        block = (f'[[operations]]\ninclude-operation-id = "{op.name}"\n'
                 f"checks.positive_data_acceptance.expected-statuses = {json.dumps(accepted)}\n")
        if server:
            block += f"checks.not_a_server_error.expected-statuses = {json.dumps(['1xx', '2xx', '3xx', '4xx'] + server)}\n"
        blocks.append(block)
    return "\n".join(blocks)


def schemathesis(tmp_path: Path, listener: str, base: str, token: str) -> tuple[int, str]:
    cfg = tmp_path / f"{listener}.toml"
    cfg.write_text(config(listener))
    exe = Path(sys.executable).parent / "schemathesis"
    cmd = [str(exe if exe.exists() else shutil.which("schemathesis")), "--config-file", str(cfg), "run",
           base + "/openapi.json", "-H", f"Authorization: Bearer {token}", "--checks", "all",
           "--max-time", str(SECONDS), "--workers", "1", "--request-timeout", "20",
           "--exclude-path", "/workspace/observe", "--no-color",
           "--report", "har", "--report-har-path", str(tmp_path / f"{listener}.har")]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=SECONDS * 3 + 120)
    return done.returncode, done.stdout + done.stderr


@pytest.fixture(scope="module")
def fuzz_room(tmp_path_factory):
    os.environ["COMMONROOM_RATE_LIMIT"] = "1000000"
    try:
        room = start_room(tmp_path_factory.mktemp("fuzz"), ROOT / "examples" / "sample.md")
    finally:
        del os.environ["COMMONROOM_RATE_LIMIT"]
    yield room
    room.stop()


def per_operation(har: Path, listener: str) -> dict[str, Counter]:
    """Requests of a schemathesis run (its HAR report) by operation of the table, with their status classes.

    A request whose method and path match no declared route (a path the
    fuzzer bent past its template, ``/mcp``, ``/openapi.json``) counts as
    ``(other)``.
    """
    routes = []
    for op in OPERATIONS.http(listener):
        assert op.http is not None
        pattern = re.sub(r"\\{[^/]+?\\}", "[^/]+", re.escape(op.http.path))
        routes.append((op.http.method, re.compile(pattern + "$"), op.name))
    counts: dict[str, Counter] = {}
    for entry in json.loads(har.read_text())["log"]["entries"]:
        method = entry["request"]["method"]
        path = urlsplit(entry["request"]["url"]).path
        name = next((n for m, rx, n in routes if m == method and rx.match(path)), "(other)")
        tally = counts.setdefault(name, Counter())
        tally["requests"] += 1
        tally[f"{entry['response']['status'] // 100}xx"] += 1
    return counts


#: The operations the fuzzer covers beyond editing: handoffs (and their tasks) and boards.
HANDOFF_AND_BOARD = tuple(op.name for op in OPERATIONS
                          if op.name.startswith(("handoff_", "task_")) or op.tag in ("boards", "board"))


def _generated(output: str) -> int:
    found = re.search(r"(\d+) generated", output)
    assert found, output[-3000:]
    return int(found.group(1))


def test_both_documents_hold_under_every_check(fuzz_room, tmp_path):
    session = fuzz_room.join("fuzzer", ALL)
    total = requests = 0
    for listener, base, token in ((INGRESS, fuzz_room.ingress, session.token),
                                  (OWNER, fuzz_room.owner, fuzz_room.owner_token)):
        code, output = schemathesis(tmp_path, listener, base, token)
        count = _generated(output)
        total += count
        counts = per_operation(tmp_path / f"{listener}.har", listener)
        sent = sum(c["requests"] for c in counts.values())
        requests += sent
        print(f"schemathesis {listener}: {count} test cases, {sent} requests in {SECONDS} s, exit {code}")
        for name, c in sorted(counts.items()):
            print(f"  {name:28} requests {c['requests']:5}  2xx {c['2xx']:5}  4xx {c['4xx']:5}  5xx {c['5xx']}")
        assert code == 0, output[-20000:]
        assert "Failures:" not in output, output[-20000:]
        # a 5xx only where the operation declares one (invitation_create: transport_unavailable 503)
        declared = {op.name for op in OPERATIONS.http(listener) if any(STATUS[e] >= 500 for e in op.errors)}
        assert {n: c["5xx"] for n, c in counts.items() if c["5xx"] and n not in declared} == {}
        served = [op.name for op in OPERATIONS.http(listener) if op.name != "workspace_observe"]
        assert [n for n in served if not counts.get(n)] == [], "operations the fuzzer never reached"
        mine = [n for n in served if n in HANDOFF_AND_BOARD]
        assert [n for n in mine if counts[n]["requests"] < 5] == [], {n: counts[n] for n in mine}
        assert listener != INGRESS or len(mine) >= 15, mine
    print(f"schemathesis: {total} test cases, {requests} requests in all")
    assert total >= 2000, total
    assert fuzz_room.proc.poll() is None, "the room died under the fuzzer"
