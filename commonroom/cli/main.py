"""The ``ce`` application: every command group registered in one place."""

from __future__ import annotations

import typer

from .access import invitation_app, invite_command, join_command, revoke_command
from .call import call_command
from . import board, editing, handoffs
from .mcp import mcp_command
from .observe import observe_command
from .serve import serve_command

app = typer.Typer(
    name="ce",
    help="commonroom: people and AI agents working together on one markdown file.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,  # plain click help: importing rich costs ~200 ms at every start
)
app.command("serve")(serve_command)
app.command("invite")(invite_command)
app.command("revoke")(revoke_command)
app.command("join")(join_command)
app.command("call")(call_command)
app.command("mcp")(mcp_command)
app.command("observe")(observe_command)
app.add_typer(invitation_app, name="invitation")
editing.register(app)
handoffs.register(app)
board.register(app)


def main() -> None:
    """Console-script entry point."""
    app()
