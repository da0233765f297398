"""How a ``ce`` command's body runs: ``--json`` in effect, a ``CommonroomError`` printed as its exit status.

Shared by :func:`commonroom.cli.common.handled` (Typer) and
:mod:`commonroom.cli.quickread` (``ce read`` without Typer); imports no Typer.
"""

from __future__ import annotations

from typing import Any, Callable

from . import render
from ..errors import CommonroomError


def invoke(command: Callable[..., Any], wants_json: bool, /, *args: Any, **kwargs: Any) -> int:
    """Run ``command(*args, **kwargs)`` with :data:`render.JSON_OUTPUT` set to ``wants_json``.

    Returns 0, or the exit status of the ``CommonroomError`` it raised
    (``error.exit_code``, :data:`commonroom.errors.EXIT_CODES`) after
    :func:`render.error` printed it on stderr (one line, or the envelope
    with ``--json``). Other exceptions propagate.
    """
    token = render.JSON_OUTPUT.set(wants_json)
    try:
        command(*args, **kwargs)
    except CommonroomError as error:
        render.error(error)
        return error.exit_code
    finally:
        render.JSON_OUTPUT.reset(token)
    return 0
