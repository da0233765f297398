"""The ``ce`` application: every command group registered in one place.

Commands print for people by default and take ``--json`` for the
schema'd answer (:mod:`commonroom.cli.render`); ``ce --version`` and
Typer's ``--install-completion`` / ``--show-completion`` are on the app.

A command's module is imported, and its click command built, only when it
is looked up (:class:`LazyCommands`): ``ce read`` imports
:mod:`commonroom.cli.editing` alone, ``ce --help`` all of them (so ``ce``
starts fast). The installed ``ce`` (:mod:`commonroom.cli.entry`)
prints ``ce --help`` from a copy rendered by ``python -m codegen`` and
comes here for everything else.
"""

from __future__ import annotations

from collections.abc import Iterator, MutableMapping
from importlib import import_module
from typing import Annotated, Any, Optional

import typer
from .usage import CeGroupBase, CeTyper

#: Every command of ``ce``, in ``ce --help`` order, and the module of
#: :mod:`commonroom.cli` that declares it: as ``NAME_command`` (``-`` read as
#: ``_``), or a command group as the ``typer.Typer`` ``NAME_app``.
COMMANDS: dict[str, str] = {
    "serve": "serve", "status": "status", "invite": "access", "revoke": "access", "sessions": "access", "join": "access",
    "call": "call", "mcp": "mcp", "observe": "observe", "console": "console",
    "proposals": "editing", "versions": "editing", "leases": "editing", "participants": "editing",
    "diff": "editing", "read": "editing", "propose": "editing", "approve": "editing", "reject": "editing",
    "withdraw": "editing", "write": "editing",
    "handoffs": "handoffs", "handoff": "handoffs", "handoff-events": "handoffs", "task": "handoffs",
    "task-cancel": "handoffs", "task-answer": "handoffs", "handoff-create": "handoffs", "handoff-accept": "handoffs",
    "handoff-request-input": "handoffs", "handoff-complete": "handoffs", "handoff-approve": "handoffs",
    "handoff-reject": "handoffs", "handoff-cancel": "handoffs",
    "invitation": "access", "lease": "editing", "board": "board", "sidecar": "sidecar",
}

#: Commands whose body imports no Typer, as ``name: "module:function"`` of :mod:`commonroom.cli`:
#: :mod:`commonroom.cli.quickread` runs them from the options stored by ``python -m codegen``
#: (``codegen/cli_fast.py``) when their arguments are plain.
FAST_COMMANDS: dict[str, str] = {"read": "document:read"}


def build_command(name: str, module_name: str) -> Any:
    """The click command (or group) ``name`` of ``commonroom.cli.MODULE_NAME``, as Typer builds it."""
    module = import_module(f"{__package__}.{module_name}")
    attribute = name.replace("-", "_")
    piece = CeTyper(rich_markup_mode=None)  # the root's settings: plain click help
    group = getattr(module, f"{attribute}_app", None)
    if isinstance(group, typer.Typer):
        piece.add_typer(group, name=name)
    else:
        piece.command(name)(getattr(module, f"{attribute}_command"))
    return typer.main.get_group(piece).commands[name]


class LazyCommands(MutableMapping[str, Any]):
    """A group's commands by name; a name mapped to a module name is built on first lookup."""

    def __init__(self, commands: dict[str, Any]) -> None:
        self._commands = commands

    def __getitem__(self, name: str) -> Any:
        command = self._commands[name]
        if isinstance(command, str):
            command = self._commands[name] = build_command(name, command)
        return command

    def __setitem__(self, name: str, command: Any) -> None:
        self._commands[name] = command

    def __delitem__(self, name: str) -> None:
        del self._commands[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._commands)

    def __len__(self) -> int:
        return len(self._commands)


class CeGroup(CeGroupBase):
    """The root group of ``ce``: :data:`COMMANDS`, each built when looked up."""

    def __init__(self, **attrs: Any) -> None:
        super().__init__(**attrs)
        self.commands = LazyCommands({**COMMANDS, **self.commands})


app = typer.Typer(
    name="ce",
    cls=CeGroup,
    help="commonroom: people and AI agents working together on one markdown file. "
         "Output is for people; add --json to any command for the schema'd JSON answer.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,  # plain click help: importing rich costs ~200 ms at every start
)


def package_version() -> str:
    """The installed commonroom version (``unknown`` when not installed as a package)."""
    from importlib.metadata import PackageNotFoundError, version  # ~30 ms: only ce --version pays

    try:
        return version("commonroom")
    except PackageNotFoundError:
        return "unknown"


def _print_version(value: bool) -> None:
    if value:
        typer.echo(f"ce {package_version()}")
        raise typer.Exit(0)


@app.callback()
def root(version_flag: Annotated[Optional[bool], typer.Option(
        "--version", callback=_print_version, is_eager=True, help="Print the version and exit.")] = None) -> None:
    """commonroom: people and AI agents working together on one markdown file.

    Output is for people; add --json to any command for the schema'd JSON answer.
    """


def main() -> None:
    """Run ``ce`` with Typer: :func:`commonroom.cli.entry.main` (the console script) hands over here."""
    app()
