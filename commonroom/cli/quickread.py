"""``ce read`` without Typer: its arguments parsed from a stored spec.

Importing Typer (and the click it vendors) is most of ``ce read``'s start. For the commands of :data:`commonroom.cli.main.FAST_COMMANDS`,
``python -m codegen`` stores each option as Typer declared it into
:data:`SPEC_FILE` (package data beside this module; ``python -m codegen
--check`` fails when it is stale). :func:`plan` parses the arguments with
it, and :func:`run` calls the command's Typer-free body
(:func:`commonroom.cli.document.read`) through
:func:`commonroom.cli.outcome.invoke`, as :func:`commonroom.cli.common.handled`
does under Typer.

Only the plain forms are taken here: ``--name value``, ``--name=value``
and ``--flag``, each name one the spec holds, values not empty and not
starting with ``-``. Anything else (``--help``, an unknown option, a
positional, ``--``, a flag given a value, an empty value, shell completion
asked for with :data:`commonroom.cli.entry.COMPLETE_VAR`, a program not
named ``ce``, a path that exists but cannot be read) goes to Typer,
which prints its usage errors as before. As click does, a repeated single
option keeps its last value, and a multiple one keeps every value in order.
This module imports no Typer.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass
from importlib import import_module
from pathlib import Path
from typing import Any

from .stdio import stdout_to_devnull

#: The stored spec: ``{command: {"target": "module:function", "params": [param, ...]}}``, each param
#: ``{"name", "opts", "kind" ("text", "path", "flag", or "argument": an optional positional,
#: left at its default here), "multiple", "default"}`` (written by codegen/cli_fast.py).
SPEC_FILE = "fast.json"
#: The parameter of every command that ``--json`` sets (:func:`commonroom.cli.common.handled`).
JSON_PARAM = "json_output"


@dataclass(frozen=True)
class Plan:
    """A command to run without Typer: ``target`` (``module:function`` of :mod:`commonroom.cli`), its keyword arguments, ``--json``."""

    target: str
    kwargs: dict[str, Any]
    wants_json: bool


def load_spec() -> dict[str, Any] | None:
    """The stored spec (:data:`SPEC_FILE`); None when it cannot be read (then Typer runs)."""
    try:
        with open(os.path.join(os.path.dirname(__file__), SPEC_FILE), encoding="utf-8") as file:
            spec = json.load(file)
    except (OSError, ValueError):
        return None
    return spec if isinstance(spec, dict) else None


def plan(args: list[str], spec: dict[str, Any] | None) -> Plan | None:
    """``args`` (``sys.argv[1:]``) as a :class:`Plan`, or None when Typer must parse them (module docstring)."""
    if not args or spec is None or args[0] not in spec:
        return None
    command = spec[args[0]]
    by_opt = {opt: param for param in command["params"] if param["kind"] != "argument" for opt in param["opts"]}
    given: dict[str, Any] = {}
    rest = iter(args[1:])
    for arg in rest:
        name, equals, value = arg.partition("=")
        param = by_opt.get(name)
        if param is None:
            return None
        if param["kind"] == "flag":
            if equals:
                return None
            given[param["name"]] = True
            continue
        if not equals:
            value = next(rest, "")
        if not value or value.startswith("-"):
            return None
        if param["kind"] == "path" and not _readable_or_absent(value):
            return None  # click refuses it ("is not readable"): Typer prints that usage error
        converted = Path(value) if param["kind"] == "path" else value
        if param["multiple"]:
            given.setdefault(param["name"], []).append(converted)
        else:
            given[param["name"]] = converted
    kwargs = {param["name"]: given.get(param["name"], param["default"]) for param in command["params"]}
    return Plan(command["target"], kwargs, bool(kwargs.pop(JSON_PARAM, False)))


def _readable_or_absent(value: str) -> bool:
    """The check of Typer's path type (``readable=True``, ``exists=False``): a path that exists must be readable."""
    try:
        os.stat(value)
    except OSError:
        return True
    return os.access(value, os.R_OK)


def run(chosen: Plan) -> int:
    """Run ``chosen`` as Typer would: its exit status (0, or the printed error's).

    As Typer 0.28's ``_main`` does: a reader that left (``BrokenPipeError``)
    ends the process with status 1 and nothing more printed; Ctrl-C gives
    130 and prints nothing; end of input (``EOFError``) prints ``Aborted!``
    on stderr and gives 1.
    """
    from .outcome import invoke

    module_name, _, function = chosen.target.partition(":")
    command = getattr(import_module(f"{__package__}.{module_name}"), function)
    try:
        return invoke(command, chosen.wants_json, **chosen.kwargs)
    except BrokenPipeError:
        stdout_to_devnull()
        return 1
    except KeyboardInterrupt:
        return 130
    except EOFError:
        sys.stderr.write("\nAborted!\n")
        return 1
