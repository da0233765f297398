"""The skills extension (``io.modelcontextprotocol/skills``): commonroom's SKILL.md.

Agent Skills ship inside the package under ``commonroom/skills/<name>/``.
Each file is an ordinary resource ``skill://<name>/<file>`` (``SKILL.md``
with mimeType ``text/markdown``, name and description from its
frontmatter; ``cacheScope: "public"``). The extension's methods
(shared/notes/mcp-2026-07-28.md §10):

- ``skills/list {cursor?}`` → ``{skills: [Skill], ttlMs, cacheScope}``;
- ``skills/get {uri}`` → ``{skill: Skill, ttlMs, cacheScope}``; an unknown
  URI is -32602. ``Mcp-Name``, when sent, must equal ``params.uri``.

A Skill is ``{uri, frontmatter, resources}`` with ``resources`` the complete
list of its files ``{uri, digest: "sha256:<hex>", size}`` (SKILL.md
included). ``directoryRead`` is not offered.

The frontmatter is read with a deliberately small YAML subset: one
``key: value`` per line, values optionally quoted (no nesting).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from ..protocol import SKILLS_EXTENSION as EXTENSION
from .dispatch import CATALOG_TTL_MS
from .jsonrpc import invalid_params
from .registry import Context, Registry

SKILLS_DIR = Path(__file__).resolve().parent.parent / "skills"


def frontmatter(text: str) -> dict[str, str]:
    """The ``---`` block at the top of a SKILL.md as a flat dict (``{}`` when absent)."""
    lines = text.splitlines()
    if not lines or lines[0].strip() != "---":
        return {}
    out: dict[str, str] = {}
    for line in lines[1:]:
        if line.strip() == "---":
            return out
        key, sep, value = line.partition(":")
        if not sep or not key.strip() or line[:1].isspace():
            continue
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        out[key.strip()] = value
    return {}


@dataclass(frozen=True)
class Skill:
    """One packaged skill: its folder's files and SKILL.md frontmatter."""

    name: str
    files: dict[str, bytes]
    meta: dict[str, str]

    @property
    def uri(self) -> str:
        """The URI of its SKILL.md."""
        return f"skill://{self.name}/SKILL.md"

    def file_uri(self, relative: str) -> str:
        """The URI of one of its files."""
        return f"skill://{self.name}/{relative}"

    def to_wire(self) -> dict[str, Any]:
        """The extension's Skill object."""
        return {
            "uri": self.uri,
            "frontmatter": dict(self.meta),
            "resources": [
                {"uri": self.file_uri(rel), "digest": "sha256:" + hashlib.sha256(data).hexdigest(),
                 "size": len(data)}
                for rel, data in sorted(self.files.items())
            ],
        }


def load_skills(root: Path = SKILLS_DIR) -> list[Skill]:
    """Every ``<root>/<name>/SKILL.md`` whose frontmatter ``name`` equals its folder."""
    skills = []
    for folder in sorted(p for p in root.iterdir() if p.is_dir()) if root.is_dir() else ():
        skill_md = folder / "SKILL.md"
        if not skill_md.is_file():
            continue
        meta = frontmatter(skill_md.read_text("utf-8"))
        if meta.get("name") != folder.name or not meta.get("description"):
            raise ValueError(f"{skill_md}: frontmatter needs name: {folder.name} and a description")
        files = {p.relative_to(folder).as_posix(): p.read_bytes()
                 for p in sorted(folder.rglob("*")) if p.is_file() and "__pycache__" not in p.parts}
        skills.append(Skill(folder.name, files, meta))
    return skills


def _mime(relative: str) -> str:
    if relative.endswith(".md"):
        return "text/markdown"
    if relative.endswith(".json"):
        return "application/json"
    return "text/plain"


def _reader(text: str) -> Callable[[Context], str]:
    return lambda ctx: text


def register_skills(registry: Registry, root: Path = SKILLS_DIR) -> list[Skill]:
    """Serve each skill's files as resources and add ``skills/list`` and ``skills/get``."""
    skills = load_skills(root)
    by_uri = {s.uri: s for s in skills}
    for skill in skills:
        for relative, data in sorted(skill.files.items()):
            is_main = relative == "SKILL.md"
            text = data.decode("utf-8")
            registry.add_resource(
                skill.file_uri(relative),
                name=skill.name if is_main else f"{skill.name}/{relative}",
                description=skill.meta["description"] if is_main else None,
                mime_type=_mime(relative),
                read=_reader(text),
                cache_scope="public", ttl_ms=CATALOG_TTL_MS,
            )

    def skills_list(ctx: Context) -> dict[str, Any]:
        if ctx.params.get("cursor") is not None:
            raise invalid_params("unknown cursor: the skill list is one page", {"field": "cursor"})
        return {"skills": [s.to_wire() for s in skills], "ttlMs": CATALOG_TTL_MS, "cacheScope": "public"}

    def skills_get(ctx: Context) -> dict[str, Any]:
        uri = ctx.params.get("uri")
        skill = by_uri.get(uri) if isinstance(uri, str) else None
        if skill is None:
            raise invalid_params("Unknown skill", {"uri": ctx.params.get("uri")})
        return {"skill": skill.to_wire(), "ttlMs": CATALOG_TTL_MS, "cacheScope": "public"}

    registry.add_method("skills/list", skills_list, params_schema="mcp#ListParams")
    registry.add_method("skills/get", skills_get, name_param="uri", name_required=False, params_schema="mcp#UriParams")
    registry.add_extension(EXTENSION, {})
    return skills
