"""No plaintext secret at rest: scan the bytes of every file the room writes.

A real room goes through a run: invitations made over HTTP and with ``ce
invite``, redeemed over HTTP and with ``ce join`` (session files), calls,
a redeemed invitation tried again, a revoked invitation, a revoked session.
Then:

- the sidecar (``.commonroom.db`` with its ``-wal`` and ``-shm``), the state
  file, the lock file and the room's log hold no session bearer, invitation
  secret, invitation token or owner token — while the room runs and after it
  stopped (when the WAL has been folded into the database);
- they do hold the sha256 digests of those secrets (so the scan reads the
  right bytes: a plaintext copy would be found the same way);
- a session file holds its own bearer (that is how ``ce call`` works; see
  docs/hardening.md, *Decisions*) and no other secret, and is mode 0600; so is the owner
  token file;
- the default session location is ``$COMMONROOM_SESSION``, else
  ``$XDG_CONFIG_HOME/commonroom/sessions/WORKSPACE_ID.json``.
"""

from __future__ import annotations

import hashlib
import json
import stat
from pathlib import Path
from typing import Iterator

import httpx
import pytest

from commonroom import invitation
from tests.roomproc import Room, ce, start_room

SAMPLE = Path(__file__).resolve().parents[2] / "examples" / "sample.md"


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def digest(secret: str) -> bytes:
    return hashlib.sha256(secret.encode()).hexdigest().encode()


def forms(secret: str) -> list[bytes]:
    """The byte forms a leaked secret could take in a file."""
    return [secret.encode(), json.dumps(secret).encode(), secret.encode("utf-16-le")]


def leaks(data: bytes, secrets: dict[str, str]) -> list[str]:
    return [label for label, secret in secrets.items() if any(form in data for form in forms(secret))]


class Run:
    """Everything secret that one run of the room handed out."""

    def __init__(self, room: Room, folder: Path):
        self.room = room
        self.folder = folder
        self.tokens: dict[str, str] = {}       # invitation tokens
        self.bearers: dict[str, str] = {}      # session bearers
        self.session_files: dict[str, Path] = {}
        self.owner_token = room.owner_token

    @property
    def invitation_secrets(self) -> dict[str, str]:
        return {f"secret of {k}": invitation.decode(t)["secret"] for k, t in self.tokens.items()}

    def all_secrets(self) -> dict[str, str]:
        return {
            **{f"token of {k}": t for k, t in self.tokens.items()},
            **self.invitation_secrets,
            **{f"bearer of {k}": b for k, b in self.bearers.items()},
            "owner token": self.owner_token,
        }

    def sidecar_files(self) -> list[Path]:
        doc = self.room.document
        return [p for p in doc.parent.iterdir() if p.name.startswith(doc.name + ".commonroom")]


def start_run(folder: Path) -> Run:
    """A room in ``folder`` and the run described in the module docstring; the room still runs."""
    room = start_room(folder, SAMPLE)
    out = Run(room, folder)
    try:
        # Over HTTP: invite and redeem; a session that reads; one that is revoked.
        for name in ("http-reader", "http-revoked"):
            token = room.invite(name, "read,observe")
            out.tokens[name] = token
            r = httpx.post(room.ingress + "/workspace/join", json={"invitation": token}, timeout=30)
            assert r.status_code == 201, r.text
            out.bearers[name] = r.json()["token"]
            assert httpx.get(room.ingress + "/workspace/document",
                             headers={"Authorization": f"Bearer {out.bearers[name]}"}, timeout=30).status_code == 200
        revoke = room.operator().post("/owner/revoke", {"session": _session_id(room, out.bearers["http-revoked"])})
        assert revoke.status_code == 200 and revoke.json()["revoked"] is True
        # A redeemed invitation tried again; an invitation revoked before use.
        again = httpx.post(room.ingress + "/workspace/join", json={"invitation": out.tokens["http-reader"]}, timeout=30)
        assert again.status_code == 403
        out.tokens["never-used"] = room.invite("never-used", "read")
        assert room.operator().post("/owner/revoke", {"invitation": out.tokens["never-used"]}).status_code == 200

        # With ce: invite, join into session files, call, revoke.
        for name in ("ce-alice", "ce-bob"):
            done = ce("invite", str(room.document), "--participant", name, "--cap", "read")
            assert done.returncode == 0, done.stderr
            out.tokens[name] = done.stdout.strip()
            path = folder / "sessions" / f"{name}.json"
            done = ce("join", out.tokens[name], "--session-file", str(path))
            assert done.returncode == 0, done.stderr
            out.session_files[name] = path
            out.bearers[name] = json.loads(path.read_text())["token"]
            done = ce("call", "GET", "/workspace/room", "--session-file", str(path))
            assert done.returncode == 0, done.stderr
        bob = json.loads(out.session_files["ce-bob"].read_text())["session_id"]
        assert ce("revoke", str(room.document), "--session", bob).returncode == 0
        assert ce("call", "GET", "/workspace/room", "--session-file",
                  str(out.session_files["ce-bob"])).returncode != 0
        return out
    except BaseException:
        room.stop()
        raise


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Iterator[Run]:
    """The run, its room running for every test of the module that reads it."""
    out = start_run(tmp_path_factory.mktemp("secrets"))
    yield out
    out.room.stop()


@pytest.fixture
def stopped_run(tmp_path: Path) -> Iterator[Run]:
    """A run of its own, for the test that stops its room (the module's room keeps running)."""
    out = start_run(tmp_path)
    yield out
    out.room.stop()


def _session_id(room: Room, bearer: str) -> str:
    r = httpx.get(room.ingress + "/workspace/session", headers={"Authorization": f"Bearer {bearer}"}, timeout=30)
    assert r.status_code == 200
    return r.json()["id"]


def test_the_run_produced_secrets_and_a_wal(run: Run):
    assert len(run.tokens) == 5 and len(run.bearers) == 4
    names = {p.name for p in run.sidecar_files()}
    doc = run.room.document.name
    assert {f"{doc}.commonroom.db", f"{doc}.commonroom.db-wal", f"{doc}.commonroom.owner"} <= names


def test_sidecar_and_room_files_hold_no_plaintext_secret_while_running(run: Run):
    secrets = run.all_secrets()
    owner_file = run.room.document.with_name(run.room.document.name + ".commonroom.owner")
    scanned = [p for p in run.sidecar_files() if p != owner_file]
    scanned.append(run.room.document.with_name(run.room.document.name + ".serve.log"))
    assert any(p.name.endswith("-wal") for p in scanned)
    for path in scanned:
        assert leaks(path.read_bytes(), secrets) == [], path.name


def test_sidecar_holds_the_digests(run: Run):
    """The positive control: what the room must keep of each secret is found by the same scan."""
    data = b"".join(p.read_bytes() for p in run.sidecar_files() if ".commonroom.db" in p.name)
    for label, secret in {**run.invitation_secrets, **{k: v for k, v in run.bearers.items()}}.items():
        assert digest(secret) in data, label


def test_session_file_holds_its_own_bearer_and_nothing_else(run: Run):
    secrets = run.all_secrets()
    for name, path in run.session_files.items():
        data = path.read_bytes()
        own = f"bearer of {name}"
        assert run.bearers[name].encode() in data, "ce call needs its own bearer"
        others = {label: s for label, s in secrets.items() if label != own}
        assert leaks(data, others) == [], path.name
        assert mode(path) == 0o600, oct(mode(path))


def test_owner_token_file_is_private(run: Run):
    path = run.room.document.with_name(run.room.document.name + ".commonroom.owner")
    assert mode(path) == 0o600, oct(mode(path))
    assert path.read_text().strip() == run.owner_token
    state = json.loads(run.room.document.with_name(run.room.document.name + ".commonroom.json").read_text())
    assert state["owner_token_file"] == str(path)


def test_nothing_leaks_after_the_room_stops(stopped_run: Run):
    run = stopped_run
    assert run.room.stop() == 0
    secrets = run.all_secrets()
    files = run.sidecar_files()
    names = {p.name for p in files}
    assert not any(n.endswith(".owner") for n in names), "owner token file removed at shutdown"
    for path in files + [run.room.document.with_name(run.room.document.name + ".serve.log")]:
        assert leaks(path.read_bytes(), secrets) == [], path.name
    db = run.room.document.with_name(run.room.document.name + ".commonroom.db").read_bytes()
    assert all(digest(b) in db for b in run.bearers.values()), "the WAL was folded into the database"


# ------------------------------------------------------ session file place


@pytest.fixture
def plain_env(monkeypatch):
    monkeypatch.delenv("COMMONROOM_SESSION", raising=False)
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)


def test_default_session_file_under_xdg_config_home(shared_room: Room, tmp_path: Path, plain_env):
    env = {"XDG_CONFIG_HOME": str(tmp_path / "xdg"), "HOME": str(tmp_path / "home")}
    done = ce("join", shared_room.invite("xdg", "read"), "--json", env=env)
    assert done.returncode == 0, done.stderr
    joined = json.loads(done.stdout)  # the room's own file: one per room
    path = tmp_path / "xdg" / "commonroom" / "sessions" / f"{joined['workspace_id']}.json"
    assert joined["session_file"] == str(path)
    assert mode(path) == 0o600
    done = ce("call", "GET", "/workspace/session", env=env)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["participant"]["name"] == "xdg"


def test_default_session_file_without_xdg_is_under_home(shared_room: Room, tmp_path: Path, plain_env):
    env = {"HOME": str(tmp_path / "home")}
    done = ce("join", shared_room.invite("home", "read"), "--json", env=env)
    assert done.returncode == 0, done.stderr
    workspace = json.loads(done.stdout)["workspace_id"]
    assert mode(tmp_path / "home" / ".config" / "commonroom" / "sessions" / f"{workspace}.json") == 0o600


def test_commonroom_session_wins(shared_room: Room, tmp_path: Path, plain_env):
    env = {"COMMONROOM_SESSION": str(tmp_path / "chosen.json"), "XDG_CONFIG_HOME": str(tmp_path / "xdg")}
    done = ce("join", shared_room.invite("chosen", "read"), env=env)
    assert done.returncode == 0, done.stderr
    assert mode(tmp_path / "chosen.json") == 0o600
    assert not (tmp_path / "xdg").exists()
    done = ce("call", "GET", "/workspace/session", env=env)
    assert json.loads(done.stdout)["participant"]["name"] == "chosen"


def test_rejoining_replaces_the_session_file_privately(shared_room: Room, tmp_path: Path):
    path = tmp_path / "s.json"
    path.write_text("{}")
    path.chmod(0o644)
    done = ce("join", shared_room.invite("rejoin", "read"), "--session-file", str(path))
    assert done.returncode == 0, done.stderr
    assert mode(path) == 0o600
    assert json.loads(path.read_text())["participant"] == "rejoin"
    assert not list(tmp_path.glob("*.tmp"))


def test_ce_join_prints_no_bearer(shared_room: Room, tmp_path: Path):
    done = ce("join", shared_room.invite("quiet", "read"), "--session-file", str(tmp_path / "s.json"))
    bearer = json.loads((tmp_path / "s.json").read_text())["token"]
    assert bearer not in done.stdout and bearer not in done.stderr
