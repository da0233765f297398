"""The client generators people use, pinned and installed for the tests.

- ``openapi-python-client`` (``requirements.txt``) in its own venv,
  ``tests/clients/.venv``: its pin (typer<0.28) conflicts with commonroom's
  (typer==0.28.0), so it cannot live in the project's environment. The
  generated code needs only ``httpx`` and ``attrs``, which the project's
  environment has, so the generated packages are imported there.
- ``openapi-typescript`` (``package.json`` / ``package-lock.json``) in
  ``tests/clients/node_modules``, installed with ``npm ci`` and run with the
  machine's ``node`` (20 or later); the official MCP TypeScript client
  (``@modelcontextprotocol/client``) and its tasks extension
  (``@modelcontextprotocol/ext-tasks``) beside it, for ``ts_handoff.mjs``
  (``npm_packages()`` installs them all).

Both installs are idempotent: they run when the pinned version is not the
one installed. A failed install raises (the tests fail, never skip).
Generated output is never kept: the tests generate into ``tmp_path``.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

HERE = Path(__file__).resolve().parent
PYTHON_GENERATOR = "openapi-python-client"
PYTHON_GENERATOR_VERSION = "0.29.1"
TS_GENERATOR = "openapi-typescript"
TS_GENERATOR_VERSION = "7.13.0"
#: openapi-python-client's configuration: no post hooks (ruff would only
#: reformat the generated code, and costs seconds on a 2-core runner).
PYTHON_CONFIG = "post_hooks: []\n"


class SetupError(RuntimeError):
    """A pinned generator could not be installed."""


@contextmanager
def _locked(name: str) -> Iterator[None]:
    with open(HERE / f".{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _run(cmd: list[str], **kwargs) -> subprocess.CompletedProcess:
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600, **kwargs)
    if done.returncode != 0:
        raise SetupError(f"{' '.join(cmd)} exited {done.returncode}:\n{done.stdout}\n{done.stderr}")
    return done


def python_generator() -> Path:
    """The ``openapi-python-client`` executable of the pinned version."""
    venv = HERE / ".venv"
    exe = venv / "bin" / PYTHON_GENERATOR
    python = venv / "bin" / "python"

    def installed() -> bool:
        if not exe.exists():
            return False
        probe = subprocess.run([str(python), "-c", "import importlib.metadata as m; "
                                f"print(m.version({PYTHON_GENERATOR!r}))"], capture_output=True, text=True)
        return probe.returncode == 0 and probe.stdout.strip() == PYTHON_GENERATOR_VERSION

    with _locked("venv"):
        if not installed():
            shutil.rmtree(venv, ignore_errors=True)
            _run([sys.executable, "-m", "venv", str(venv)])
            _run([str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check",
                  "-r", str(HERE / "requirements.txt")])
            if not installed():
                raise SetupError(f"{PYTHON_GENERATOR} {PYTHON_GENERATOR_VERSION} missing after install")
    return exe


def npm_packages() -> str:
    """Install every npm package ``package.json`` pins (``npm ci`` with the lock) unless all are there at
    their pinned versions; the machine's ``node`` (20 or later). ``SetupError`` when it cannot."""
    node = shutil.which("node")
    npm = shutil.which("npm")
    if node is None or npm is None:
        raise SetupError("node and npm must be installed (Node 20 or later)")
    pinned: dict[str, str] = json.loads((HERE / "package.json").read_text())["dependencies"]

    def installed() -> bool:
        for name, version in pinned.items():
            try:
                if json.loads((HERE / "node_modules" / name / "package.json").read_text())["version"] != version:
                    return False
            except (OSError, ValueError, KeyError):
                return False
        return True

    with _locked("npm"):
        if not installed():
            _run([npm, "ci", "--prefix", str(HERE), "--no-audit", "--no-fund", "--loglevel=error"],
                 env={**os.environ, "npm_config_update_notifier": "false"})
            if not installed():
                raise SetupError(f"the pinned npm packages ({', '.join(pinned)}) are missing after npm ci")
    return node


def typescript_generator() -> list[str]:
    """The command that runs ``openapi-typescript`` of the pinned version (``node <cli>``)."""
    node = npm_packages()
    package = HERE / "node_modules" / TS_GENERATOR / "package.json"
    if json.loads(package.read_text())["version"] != TS_GENERATOR_VERSION:
        raise SetupError(f"package.json does not pin {TS_GENERATOR} {TS_GENERATOR_VERSION}")
    bin_field = json.loads(package.read_text())["bin"]
    cli = bin_field if isinstance(bin_field, str) else bin_field[TS_GENERATOR]
    return [node, str(package.parent / cli)]


def generate_python(document: Path, out: Path) -> subprocess.CompletedProcess:
    """Run ``openapi-python-client generate`` on ``document`` into package folder ``out``."""
    config = out.parent / f"{out.name}.config.yml"
    config.write_text(PYTHON_CONFIG)
    return subprocess.run([str(python_generator()), "generate", "--path", str(document), "--meta", "none",
                           "--output-path", str(out), "--config", str(config)],
                          capture_output=True, text=True, timeout=300)


def generate_typescript(document: Path, out: Path) -> subprocess.CompletedProcess:
    """Run ``openapi-typescript`` on ``document``, writing ``out`` (a ``.d.ts``)."""
    return subprocess.run([*typescript_generator(), str(document), "--output", str(out)],
                          capture_output=True, text=True, timeout=300, cwd=HERE)
