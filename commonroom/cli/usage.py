"""Usage lines that name a command's arguments the way its help text does.

Typer 0.28 prints a required argument in the usage line as ``{file}``
(its own braces around the parameter's name), which reads like a template
placeholder nobody filled in: ``Usage: ce serve [OPTIONS] {file}``. Every
``ce`` command is a :class:`CeCommand` instead (through :class:`CeTyper`),
so the usage line follows click's convention, which the commands' help
already uses ("Start the room on FILE"): ``ce version diff [OPTIONS] [FILE] A [B]``,
and the *Arguments* section and click's errors ("Missing argument 'FILE'")
name each argument the same way.
"""

from __future__ import annotations

from typing import Any

import typer
from typer.core import TyperArgument, TyperCommand, TyperGroup

#: Characters of a command's first sentence its group's help shows (click cuts at ~45 with "...").
SHORT_HELP = 10_000


class CeCommand(TyperCommand):
    """A ``ce`` command: each argument is named ``NAME`` (``[NAME]`` when optional) in its usage line,
    and its help shows the docstring's double-backtick literals between single backticks."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if self.help:  # the docstring's reST literals (``ce read``) read as `ce read` on a terminal
            self.help = self.help.replace("``", "`")
        for param in self.params:
            if isinstance(param, TyperArgument) and param.metavar is None:
                param.metavar = (param.name or "").upper()

    def collect_usage_pieces(self, ctx: Any) -> list[str]:
        """``[OPTIONS]``, then each argument as ``NAME``, ``[NAME]`` or ``NAME...`` (click's convention)."""
        pieces = [self.options_metavar] if self.options_metavar else []
        for param in self.get_params(ctx):
            if isinstance(param, TyperArgument):
                if param.metavar == "":  # named through the argument before it (``[FILE] ID``)
                    continue
                piece = str(param.metavar) + ("..." if param.nargs != 1 else "")
                pieces.append(piece if param.required else f"[{piece}]")
            else:
                pieces.extend(param.get_usage_pieces(ctx))
        return pieces


class CeGroupBase(TyperGroup):
    """A ``ce`` command group whose *Commands* section shows each command's whole first sentence
    (wrapped), where click would cut it to the terminal's width with ``...``."""

    def format_commands(self, ctx: Any, formatter: Any) -> None:
        """The *Commands* section: each command and its first sentence, never cut."""
        rows = []
        for name in self.list_commands(ctx):
            command = self.get_command(ctx, name)
            if command is not None and not command.hidden:
                rows.append((name, command.get_short_help_str(limit=SHORT_HELP)))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


class CeTyper(typer.Typer):
    """A ``typer.Typer`` whose commands are :class:`CeCommand` and whose groups :class:`CeGroupBase`,
    unless ``cls`` says otherwise."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if kwargs.get("cls") is None:
            kwargs["cls"] = CeGroupBase
        super().__init__(*args, **kwargs)

    def command(self, *args: Any, **kwargs: Any) -> Any:
        """As ``typer.Typer.command``, with ``cls`` defaulting to :class:`CeCommand`."""
        if kwargs.get("cls") is None:
            kwargs["cls"] = CeCommand
        return super().command(*args, **kwargs)


class ShowByDefault(CeGroupBase):
    """A ``ce`` command group whose ``show`` runs when the first argument names none of its commands:
    ``ce handoff FILE ID`` is ``ce handoff show FILE ID``, as the command read before it was a group."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        """``args``, with ``show`` put first when they start with neither a command nor an option."""
        if args and args[0] not in self.commands and not args[0].startswith("-"):
            args = ["show", *args]
        return super().parse_args(ctx, args)
