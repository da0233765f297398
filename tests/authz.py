"""The authorization matrix, derived from the operation table.

:func:`cases` turns :data:`commonroom.operations.OPERATIONS` into every
combination the matrix checks, each with the answer the seeds document:

- **listener**: an operation is served on the listeners its ``Http``
  binding names; on any other one it is ``not_found`` 404 whatever the
  bearer (``protocol.md``: routes outside a listener do not exist there);
  ``/mcp`` is the ingress's only (seed ``protocol.txt``: "The owner port
  returns 404").
- **token state** on the ingress: missing, unknown and revoked bearers are
  ``unauthorized`` 401, an expired one ``session_expired`` 401 (seed
  ``protocol.txt``, HTTP table); over MCP the same with JSON-RPC -31000
  whose ``data`` is that error object. On the owner port only the owner
  token is accepted: every session bearer, valid or not, is
  ``unauthorized`` 401. Public operations (``join``) ignore the bearer.
- **capability** (a valid session): holding the operation's capability, or
  one of its ``also`` alternatives, is never refused for authorization;
  holding every other capability but those is ``permission_denied`` 403,
  and over MCP an ``isError`` tool result whose structured content is the
  same error object (seed ``protocol.txt``: "Tool permission failures are
  HTTP 200 results with isError: true").

Inputs come from :data:`tests.parity.SAMPLES` plus :data:`EXTRA` (ids that
name nothing, so a call that passes authorization gets a documented
"not found" or a harmless success); a required property with no sample
fails loudly, so a new operation is covered as soon as it is declared.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from commonroom.bundle import bundle
from commonroom.errors import STATUS
from commonroom.operations import OPERATIONS, Operation, Table
from commonroom.operations.spec import INGRESS, OWNER
from commonroom.vocabulary import CAPABILITIES  # every capability an invitation can grant
from tests.parity import SAMPLES

#: Samples for the properties the parity samples leave out (operations without an MCP tool).
EXTRA: dict[str, Any] = {
    "invitation": "commonroom://join/e30", "task_id": "task_authz", "input_responses": {},
    "participant": "authz-nobody", "capabilities": ["read"],
}
TOKEN_STATES = ("missing", "unknown", "expired", "revoked", "valid")
#: Operations the operator (owner token) is refused although it holds every
#: capability: they need a session of their own (docs/protocol.md, the owner port).
OPERATOR_REFUSED = {"lease_acquire": "permission_denied"}
#: What a valid bearer on the wrong listener, or a refused one, answers.
REFUSALS = frozenset({"unauthorized", "session_expired", "permission_denied"})


def inputs(op: Operation) -> dict[str, Any]:
    """The required input properties of ``op`` (``KeyError`` names one without a sample)."""
    samples = {**SAMPLES, **EXTRA}
    out: dict[str, Any] = {}
    for prop in bundle(op.input).get("required", []):
        if prop not in samples:
            raise KeyError(f"{op.name}: no authz sample for required input property {prop!r}")
        out[prop] = samples[prop]
    return out


@dataclass(frozen=True)
class Expect:
    """The documented answer: a refusal (``code`` at ``status``), ``allowed`` or a missing route."""

    kind: str  # "refused" | "allowed"
    status: int = 0
    code: str = ""


@dataclass(frozen=True)
class Case:
    """One cell: ``op`` on ``listener`` through ``adapter`` (``http``/``mcp``) with a bearer."""

    op: str
    listener: str
    adapter: str
    token: str          # a TOKEN_STATES entry, or "owner" (the owner token)
    caps: str           # the caller's capability set label ("" unless token is valid)
    expect: Expect

    @property
    def label(self) -> str:
        return f"{self.op}/{self.listener}/{self.adapter}/{self.token}/{self.caps or '-'}"


def cap_sets(op: Operation) -> list[tuple[str, frozenset[str], bool]]:
    """``(label, capabilities, allowed)`` for the operation's capability dimension."""
    if op.capability is None:
        return [("only:observe", frozenset({"observe"}), True)]
    granting = (op.capability, *op.also)
    out = [(f"only:{cap}", frozenset({cap}), True) for cap in granting]
    rest = frozenset(CAPABILITIES) - set(granting)
    out.append((absent_label(granting), rest, False))
    return out


def absent_label(granting: tuple[str, ...]) -> str:
    """The label of the session holding every capability but ``granting``."""
    return "all-but:" + "+".join(sorted(granting))


def session_sets(table: Table = OPERATIONS) -> dict[str, frozenset[str]]:
    """Every capability set the matrix needs a session for, by label."""
    out: dict[str, frozenset[str]] = {}
    for op in table:
        for label, caps, _ in cap_sets(op):
            out[label] = caps
    return out


def _refused(code: str) -> Expect:
    return Expect("refused", STATUS[code], code)


NOT_FOUND = _refused("not_found")


def cases(table: Table = OPERATIONS) -> list[Case]:
    """Every cell of the matrix for ``table``."""
    out: list[Case] = []
    for op in table:
        if op.http is None:
            continue
        public = op.http.public
        adapters = ["http"] + (["mcp"] if op.mcp is not None else [])
        for listener in (INGRESS, OWNER):
            served = listener in op.http.listeners
            for adapter in adapters:
                mcp_missing = adapter == "mcp" and listener == OWNER
                for token in (*TOKEN_STATES, "owner"):
                    sets = cap_sets(op) if token == "valid" else [("", frozenset(), True)]
                    for label, _, allowed in sets:
                        out.append(Case(op.name, listener, adapter, token, label,
                                        _expect(op, listener, served and not mcp_missing, public, token, allowed)))
    return out


def _expect(op: Operation, listener: str, served: bool, public: bool, token: str, allowed: bool) -> Expect:
    if not served:
        return NOT_FOUND
    if public:
        return Expect("allowed")
    if listener == OWNER:
        if token != "owner":
            return _refused("unauthorized")
        return _refused(OPERATOR_REFUSED[op.name]) if op.name in OPERATOR_REFUSED else Expect("allowed")
    if token == "expired":
        return _refused("session_expired")
    if token != "valid":
        return _refused("unauthorized")  # missing, unknown, revoked, and the owner token on the ingress
    return Expect("allowed") if allowed else _refused("permission_denied")


def documented_codes(op: Operation) -> set[str]:
    """Error codes an authorized call of ``op`` may answer (its own, plus the adapters')."""
    return (set(op.errors) | {"invalid_request", "limit_exceeded"}) - REFUSALS


def check_http(op: Operation, case: Case, status: int, body: Any) -> str | None:
    """Why an HTTP answer breaks ``case.expect`` (None: it keeps it)."""
    expect = case.expect
    if expect.kind == "refused":
        if status != expect.status or not isinstance(body, dict) or body.get("error") != expect.code:
            return f"expected {expect.status} {expect.code}, got {status} {body}"
        return None
    assert op.http is not None
    if status == op.http.status:
        return None
    if not isinstance(body, dict) or body.get("error") not in documented_codes(op):
        return f"expected success or a documented error of {op.name}, got {status} {body}"
    if STATUS[body["error"]] != status and status != 413:
        return f"{body['error']} came with {status}"
    return None


def check_mcp(op: Operation, case: Case, status: int, data: Any) -> str | None:
    """Why an MCP ``tools/call`` answer breaks ``case.expect`` (None: it keeps it)."""
    expect = case.expect
    if expect.code == "not_found":
        return None if status == 404 else f"/mcp on {case.listener}: expected 404, got {status}"
    if expect.kind == "refused" and expect.code != "permission_denied":
        error = data.get("error") if isinstance(data, dict) else None
        if status != expect.status or not error or error.get("code") != -31000 \
                or (error.get("data") or {}).get("error") != expect.code:
            return f"expected {expect.status} -31000 {expect.code}, got {status} {data}"
        return None
    if status != 200 or not isinstance(data, dict) or "result" not in data:
        return f"a tool call answers 200 with a result, got {status} {data}"
    result = data["result"]
    structured = result.get("structuredContent")
    if expect.kind == "refused":
        if result.get("isError") is not True or not isinstance(structured, dict) \
                or structured.get("error") != "permission_denied":
            return f"expected an isError permission_denied result, got {result}"
        return None
    if result.get("isError") and (not isinstance(structured, dict)
                                  or structured.get("error") not in documented_codes(op)):
        return f"expected success or a documented error of {op.name}, got {result}"
    return None
