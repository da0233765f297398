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
from .usage import SHORT_HELP, CeGroupBase, CeTyper

#: Every command of ``ce``, in ``ce --help`` order, and the module of
#: :mod:`commonroom.cli` that declares it: as ``NAME_command`` (``-`` read as
#: ``_``), or a command group as the ``typer.Typer`` ``NAME_app``.
COMMANDS: dict[str, str] = {
    "serve": "serve", "invite": "access", "revoke": "access", "sessions": "access", "console": "console",
    "sidecar": "sidecar", "invitation": "access",
    "join": "access", "status": "status", "read": "editing", "propose": "proposals", "write": "editing",
    "proposal": "proposals", "version": "versions", "lease": "editing", "participants": "editing",
    "handoff": "handoffs", "task": "tasks", "board": "board", "observe": "observe", "call": "call", "mcp": "mcp",
}

#: What each command needs, the headings of ``ce --help``: every command of :data:`COMMANDS` under one.
SECTIONS: dict[str, tuple[str, ...]] = {
    "Owner commands (on the room's machine, with its FILE)": (
        "serve", "invite", "revoke", "console", "sidecar", "invitation"),
    "Participant commands (a session, from any machine)": (
        "join", "status", "read", "propose", "write", "proposal", "version", "lease", "participants", "sessions",
        "handoff", "task", "board", "observe", "call", "mcp"),
}

#: The names before the command groups, kept for scripts and hidden from ``ce --help`` (docs/operator.md,
#: *Aliases*): ``name: "module:function"`` of :mod:`commonroom.cli`.
ALIASES: dict[str, str] = {
    "proposals": "proposals:list_command", "approve": "proposals:approve_command",
    "reject": "proposals:reject_command", "withdraw": "proposals:withdraw_command",
    "versions": "versions:list_command", "diff": "versions:diff_command", "leases": "editing:lease_list",
    "handoffs": "handoffs:list_command", "handoff-events": "handoffs:events_command",
    "handoff-create": "handoffs:create_command", "handoff-accept": "handoffs:accept_command",
    "handoff-request-input": "handoffs:request_input_command", "handoff-complete": "handoffs:complete_command",
    "handoff-approve": "handoffs:approve_command", "handoff-reject": "handoffs:reject_command",
    "handoff-cancel": "handoffs:cancel_command", "task-cancel": "tasks:cancel_command",
    "task-answer": "tasks:answer_command",
}

#: Commands whose body imports no Typer, as ``name: "module:function"`` of :mod:`commonroom.cli`:
#: :mod:`commonroom.cli.quickread` runs them from the options stored by ``python -m codegen``
#: (``codegen/cli_fast.py``) when their arguments are plain.
FAST_COMMANDS: dict[str, str] = {"read": "document:read"}


def build_command(name: str, module_name: str) -> Any:
    """The click command (or group) ``name`` of ``commonroom.cli.MODULE_NAME``, as Typer builds it; an
    :data:`ALIASES` entry (``module:function``) is that function, hidden from the help."""
    module_name, _, function = module_name.partition(":")
    module = import_module(f"{__package__}.{module_name}")
    attribute = name.replace("-", "_")
    piece = CeTyper(rich_markup_mode=None)  # the root's settings: plain click help
    group = getattr(module, f"{attribute}_app", None)
    if function:
        piece.command(name, hidden=True)(getattr(module, function))
    elif isinstance(group, typer.Typer):
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
    """The root group of ``ce``: :data:`COMMANDS` and :data:`ALIASES`, each built when looked up; its help lists
    the commands under :data:`SECTIONS` (what each needs), the aliases not at all."""

    def __init__(self, **attrs: Any) -> None:
        super().__init__(**attrs)
        self.commands = LazyCommands({**COMMANDS, **ALIASES, **self.commands})

    def list_commands(self, ctx: Any) -> list[str]:
        """The commands in :data:`COMMANDS` order, then the aliases (hidden)."""
        return list(self.commands)

    def format_commands(self, ctx: Any, formatter: Any) -> None:
        """One section of commands per :data:`SECTIONS` heading, each command with its whole first sentence."""
        for title, names in SECTIONS.items():
            rows = [(name, self.commands[name].get_short_help_str(limit=SHORT_HELP)) for name in names]
            with formatter.section(title):
                formatter.write_dl(rows)


app = typer.Typer(
    name="ce",
    cls=CeGroup,
    help="commonroom: people and AI agents working together on one markdown file. "
         "Output is for people; add --json to any command for the schema'd JSON answer.",
    epilog="A participant command acts as a session: --session-file F, else the session ce join stored for "
           "the room (one per room; COMMONROOM_SESSION names one). The room's owner may give the room's FILE "
           "instead to the commands that read (ce read FILE, ce proposal list FILE, ce status FILE).",
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
