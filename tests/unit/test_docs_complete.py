"""Docs that cannot fall behind (STYLE.md habit 7).

Every error code, event type, HTTP route, MCP tool/resource/prompt and
``ce`` command that exists in the code must appear in ``docs/``. The lists
come from the code itself, so a new route or command without docs fails
here.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import typer

from commonroom import errors
from commonroom.cli.main import app as ce_app
from commonroom.mcp import build_registry
from commonroom.mcp.resources import Subscriptions
from commonroom.schemas import load_all

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"


def _docs(*names: str) -> str:
    files = [DOCS / n for n in names] if names else sorted(DOCS.glob("*.md"))
    return "\n".join(p.read_text("utf-8") for p in files)


def _routes(tmp_path: Path) -> set[str]:
    from commonroom.room import build_room

    doc = tmp_path / "doc.md"
    shutil.copyfile(ROOT / "examples" / "sample.md", doc)
    engine, owner, ingress, hooks = build_room(doc, "0" * 64)
    found: set[str] = set()
    try:
        for guarded in (owner, ingress):
            app = guarded
            while not hasattr(app, "_router"):  # the wrappers (StreamGuard, FrontDoor) keep theirs in .app
                app = app.app

            def walk(nodes):
                for node in nodes:
                    if node.resource is not None:
                        found.add(node.uri_template)
                    walk(node.children)

            walk(app._router._roots)
    finally:
        engine.close()
    return found


def test_every_error_code_is_documented():
    text = _docs("protocol.md")
    missing = [code for code in errors.STATUS if f"`{code}`" not in text]
    assert not missing, f"docs/protocol.md lacks error codes {missing}"


def test_every_event_type_is_documented():
    types = load_all()["events.json"]["$defs"]["EventType"]["enum"]
    text = _docs("protocol.md")
    missing = [t for t in types if f"`{t}`" not in text]
    assert not missing, f"docs/protocol.md lacks event types {missing}"


def test_every_route_is_documented(tmp_path):
    routes = _routes(tmp_path)
    assert "/workspace/document" in routes and "/mcp" in routes  # the walk works
    text = _docs("protocol.md")
    missing = sorted(r for r in routes if f"`{r}`" not in text)
    assert not missing, f"docs/protocol.md lacks routes {missing}"


def test_every_mcp_tool_resource_and_prompt_is_documented():
    registry = build_registry(Subscriptions(), plugins="")
    names = list(registry.tools) + list(registry.prompts) + [r for r in registry.resources]
    assert "document_read" in names
    text = _docs("mcp.md")
    missing = [n for n in names if n not in text]
    assert not missing, f"docs/mcp.md lacks {missing}"


def _commands(group, prefix=""):
    out = []
    for name, command in sorted(group.commands.items()):
        full = f"{prefix}{name}"
        if hasattr(command, "commands"):
            out.extend(_commands(command, full + " "))
        else:
            out.append(full)
    return out


def test_every_ce_command_is_documented():
    commands = _commands(typer.main.get_command(ce_app))
    assert "serve" in commands and "lease acquire" in commands
    text = _docs()
    missing = [c for c in commands if f"ce {c}" not in text]
    assert not missing, f"docs/ lacks ce commands {missing}"
