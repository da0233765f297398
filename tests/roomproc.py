"""A real room process for tests: ``ce serve`` on loopback in a temp folder.

No part of commonroom is mocked: the room runs as its own process (gunicorn,
one asgi worker) on a real file and sidecar; tests talk to it over HTTP
(httpx) and through the installed ``ce``.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from tests.shared_data import CORPUS as SHARED_CORPUS

ROOT = Path(__file__).resolve().parents[1]
CORPUS = SHARED_CORPUS


def corpus_files() -> list[Path]:
    """Every markdown document of the shared corpus."""
    return sorted(CORPUS.glob("*.md"))


def ce_path() -> str:
    """The installed ``ce`` beside this Python."""
    candidate = Path(sys.executable).parent / "ce"
    return str(candidate) if candidate.exists() else "ce"


def ce_command(env: dict[str, str] | None = None) -> list[str]:
    """What runs ``ce`` for a room started with ``env``: the installed script, or, for an older
    checkout on ``env``'s ``PYTHONPATH`` (the benches' ``--before``), ``python -P -m commonroom``
    (the script may name an entry point that checkout lacks; ``-P``: not the current directory first)."""
    return [sys.executable, "-P", "-m", "commonroom"] if env and "PYTHONPATH" in env else [ce_path()]


def ce(*args: str, env: dict[str, str] | None = None, timeout: float = 60, input: str | None = None) -> subprocess.CompletedProcess:
    """Run ``ce`` and capture its output (text)."""
    return subprocess.run([ce_path(), *args], capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})}, input=input)


@dataclass
class Room:
    """A running room. ``stop()`` ends it (SIGTERM, then SIGKILL)."""

    document: Path
    proc: subprocess.Popen
    state: dict[str, Any] = field(default_factory=dict)

    @property
    def ingress(self) -> str:
        host = self.state["ingress"].get("host") or "127.0.0.1"
        return f"http://[{host}]:{self.state['ingress']['port']}" if ":" in host else \
            f"http://{host}:{self.state['ingress']['port']}"

    @property
    def owner(self) -> str:
        return f"http://127.0.0.1:{self.state['owner_port']}"

    @property
    def owner_token(self) -> str:
        return Path(self.state["owner_token_file"]).read_text().strip()

    def invite(self, participant: str, caps: str | list[str] = "read,observe", **extra: Any) -> str:
        """An invitation token from the owner API."""
        if isinstance(caps, str):
            caps = [c for c in caps.split(",") if c]
        body = {"participant": participant, "capabilities": caps, **extra}
        r = httpx.post(self.owner + "/owner/invitations", json=body,
                       headers={"Authorization": f"Bearer {self.owner_token}"}, timeout=30)
        assert r.status_code == 201, r.text
        return r.json()["token"]

    def join(self, participant: str, caps: str | list[str] = "read,observe", **extra: Any) -> "Client":
        """Invite and redeem: a client holding a fresh session."""
        token = self.invite(participant, caps, **extra)
        r = httpx.post(self.ingress + "/workspace/join", json={"invitation": token}, timeout=30)
        assert r.status_code == 201, r.text
        data = r.json()
        return Client(self, data["token"], data["session"])

    def wait_for_file(self, data: bytes, timeout: float = 10.0) -> bytes:
        """The document's bytes once they equal ``data`` (the file follows the
        head from a background thread), or whatever they are at the deadline."""
        deadline = time.monotonic() + timeout
        current = self.document.read_bytes() if self.document.exists() else b""
        while current != data and time.monotonic() < deadline:
            time.sleep(0.02)
            current = self.document.read_bytes() if self.document.exists() else b""
        return current

    def restart(self, between: Any = None) -> "Room":
        """Stop this room, run ``between()`` while it is down, serve it again on the same ports."""
        ports = (str(self.state["ingress"]["port"]), str(self.state["owner_port"]))
        self.stop()
        if between is not None:
            between()
        return start_room(self.document.parent, name=self.document.name,
                          args=("--port", ports[0], "--owner-port", ports[1]))

    def operator(self) -> "Client":
        """A client on the owner port with the owner token (the operator)."""
        return Client(self, self.owner_token, {}, base=self.owner)

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 15) -> int:
        """Stop the room; returns its exit status."""
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        return self.proc.returncode


@dataclass
class Client:
    """HTTP calls with one bearer."""

    room: Room
    token: str
    session: dict[str, Any]
    base: str | None = None

    def request(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        headers = {"Authorization": f"Bearer {self.token}", **kwargs.pop("headers", {})}
        return httpx.request(method, (self.base or self.room.ingress) + path, headers=headers,
                             timeout=kwargs.pop("timeout", 30), **kwargs)

    def get(self, path: str, **kwargs: Any) -> httpx.Response:
        return self.request("GET", path, **kwargs)

    def post(self, path: str, body: Any = None, **kwargs: Any) -> httpx.Response:
        return self.request("POST", path, json=body, **kwargs)


def plugin_env(plugin: str) -> dict[str, str]:
    """The environment that loads ``plugin`` (``module:function``) into a room, with ``tests`` importable."""
    return {"COMMONROOM_MCP_PLUGINS": plugin,
            "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}


def start_room(folder: Path, source: Path | None = None, *, name: str = "doc.md", text: str | None = None,
               args: tuple[str, ...] = (), wait: float = 30, env: dict[str, str] | None = None,
               log_file: Path | None = None, command: list[str] | None = None) -> Room:
    """Copy ``source`` (or write ``text``) into ``folder`` and serve it (``env`` adds to the environment).

    ``command``: what runs ``ce`` (default the installed script; the benches pass :func:`ce_command`).

    The room's stdout and stderr go to ``log_file`` (default
    ``<folder>/<name>.serve.log``).
    """
    folder.mkdir(parents=True, exist_ok=True)
    document = folder / name
    if source is not None:
        shutil.copyfile(source, document)
    elif text is not None and not document.exists():
        document.write_bytes(text.encode("utf-8"))
    log_file = log_file or folder / f"{name}.serve.log"
    log = open(log_file, "ab")
    proc = subprocess.Popen([*(command or [ce_path()]), "serve", str(document), "--port", "0", "--owner-port", "0", *args],
                            stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                            env={**os.environ, **env} if env else None)
    room = Room(document, proc)
    state_file = document.with_name(document.name + ".commonroom.json")
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"ce serve exited {proc.returncode}: {log_file.read_text()}")
        if state_file.exists():
            try:
                room.state = json.loads(state_file.read_text())
                r = httpx.get(room.ingress + "/workspace/room", timeout=2)
                if r.status_code == 401:
                    return room
            except (ValueError, httpx.HTTPError):
                pass
        time.sleep(0.05)
    room.stop()
    raise RuntimeError("room did not start in time")
