"""Store the options of ``ce read`` into ``commonroom/cli/fast.json`` (parsed without Typer).

:mod:`commonroom.cli.quickread` parses a command of
:data:`commonroom.cli.main.FAST_COMMANDS` with this spec instead of
importing Typer. ``python -m codegen`` writes it after ``commonroom/cli/help.txt``;
``python -m codegen --check`` fails when it differs from the application.
Each option is read from the click command Typer builds (the one
declaration of the option); an option of a kind the fast path does not
parse as click would (an argument, a count, an environment variable, a
callback, a type other than text, path or flag, an argument that is required) stops codegen with what to change.
"""

from __future__ import annotations

import inspect
import json
from importlib import import_module
from pathlib import Path
from typing import Any

from commonroom.cli.quickread import JSON_PARAM, SPEC_FILE

ROOT = Path(__file__).resolve().parents[1]
SPEC_PATH = ROOT / "commonroom" / "cli" / SPEC_FILE


def _kind(command: str, param: Any) -> str:
    from typer.models import TyperPath

    problem = None
    if param.param_type_name == "argument":
        if param.required or param.default is not None or param.nargs != 1:
            problem = "is an argument the fast path cannot leave out"
        else:
            return "argument"  # left out: a positional given sends the command to Typer
    elif param.param_type_name != "option":
        problem = "is neither an option nor an argument"
    elif param.secondary_opts or param.envvar or param.callback or param.required or param.nargs != 1 \
            or getattr(param, "count", False) or param.is_eager or not param.expose_value \
            or getattr(param, "prompt", None) is not None:
        problem = "has click settings the fast path does not parse"
    elif param.is_flag:
        if param.multiple or param.default is not False or not param.is_bool_flag:
            problem = "is a flag that is not a plain on-switch"
        else:
            return "flag"
    elif isinstance(param.type, TyperPath):
        if param.type.exists or param.type.resolve_path or not (param.type.file_okay and param.type.dir_okay) \
                or param.type.allow_dash or not param.type.readable or param.type.writable \
                or getattr(param.type, "executable", False) or param.type.type is not None or param.default is not None:
            problem = "is a path with checks the fast path does not make"
        else:
            return "path"
    elif type(param.type).__name__ == "StringParamType" and (param.default is None or param.multiple and param.default in ((), None)):
        return "text"
    else:
        problem = f"has the type {param.type!r}"
    raise SystemExit(f"ce {command}: the parameter {param.name!r} {problem}; "
                     "take the command out of commonroom.cli.main.FAST_COMMANDS or keep the option plain")


def spec() -> dict[str, Any]:
    """``{command: {"target", "params"}}`` for every command of ``FAST_COMMANDS``, from the Typer application."""
    from commonroom.cli.main import COMMANDS, FAST_COMMANDS, build_command

    out: dict[str, Any] = {}
    for name, target in FAST_COMMANDS.items():
        command = build_command(name, COMMANDS[name])
        params = [{"name": p.name, "opts": list(p.opts), "kind": _kind(name, p), "multiple": bool(p.multiple),
                   "default": None if p.default in ((), None) else p.default} for p in command.params]
        module_name, _, function = target.partition(":")
        body = getattr(import_module(f"commonroom.cli.{module_name}"), function)
        expected = [p["name"] for p in params if p["name"] != JSON_PARAM]
        if list(inspect.signature(body).parameters) != expected:
            raise SystemExit(f"ce {name}: {target} takes {list(inspect.signature(body).parameters)}, "
                             f"the command's options are {expected}")
        out[name] = {"target": target, "params": params}
    return out


def render() -> str:
    """The spec as stored: indented JSON, keys in declaration order, final newline."""
    return json.dumps(spec(), indent=2) + "\n"


def stale(path: Path = SPEC_PATH) -> bool:
    """Whether ``path`` is missing or differs from :func:`render`."""
    return not path.exists() or path.read_bytes() != render().encode("utf-8")


def write(path: Path = SPEC_PATH) -> None:
    """Write :func:`render` to ``path`` (UTF-8)."""
    path.write_bytes(render().encode("utf-8"))
