"""The ``ce`` application: every command group registered in one place.

Commands print for people by default and take ``--json`` for the
schema'd answer (:mod:`commonroom.cli.render`); ``ce --version`` and
Typer's ``--install-completion`` / ``--show-completion`` are on the app.
"""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from .access import invitation_app, invite_command, join_command, revoke_command
from .call import call_command
from .console import console_command
from . import board, editing, handoffs
from .mcp import mcp_command
from .observe import observe_command
from .serve import serve_command
from .status import status_command

app = typer.Typer(
    name="ce",
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


app.command("serve")(serve_command)
app.command("status")(status_command)
app.command("invite")(invite_command)
app.command("revoke")(revoke_command)
app.command("join")(join_command)
app.command("call")(call_command)
app.command("mcp")(mcp_command)
app.command("observe")(observe_command)
app.command("console")(console_command)
app.add_typer(invitation_app, name="invitation")
editing.register(app)
handoffs.register(app)
board.register(app)


def main() -> None:
    """Console-script entry point."""
    app()
