"""``ce serve FILE``: run the room (see :mod:`commonroom.server`)."""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path
from typing import Annotated, List, NoReturn, Optional

import typer


def serve_command(
    file: Annotated[Path, typer.Argument(help="The markdown file the room owns.")],
    port: Annotated[Optional[int], typer.Option(
        help="Session ingress port. Default: the port of the room's last run, else 7711; "
             "0: that port, else a free one.", show_default=False)] = None,
    owner_port: Annotated[Optional[int], typer.Option(
        help="Owner port on 127.0.0.1. Default: the port of the room's last run, else 7710; "
             "0: that port, else a free one.", show_default=False)] = None,
    host: Annotated[str, typer.Option(help="Session ingress address (loopback transport).")] = "127.0.0.1",
    socket: Annotated[bool, typer.Option("--socket", help="Also listen on a Unix socket (local transport).")] = False,
    transport: Annotated[Optional[str], typer.Option(
        help="Also open a transport plugin's session ingress, e.g. tailcat (an encrypted overlay).")] = None,
    address: Annotated[Optional[str], typer.Option(
        help="The plugin ingress's address (tailcat: an address of a WireGuard interface here; "
             "default: tailscale ip -4).")] = None,
    transport_port: Annotated[Optional[int], typer.Option(
        help="The plugin ingress's port (default: the same number as --port).")] = None,
    allow_host: Annotated[Optional[List[str]], typer.Option(
        "--allow-host", help="A Host name both session listeners also answer to (repeatable; never the owner "
                             "port), e.g. a tailnet's MagicDNS name.")] = None,
    log_level: Annotated[str, typer.Option(help="gunicorn log level.")] = "warning",
) -> None:
    """Start the room on FILE: one process, two listeners, until Ctrl-C.

    With --transport, a third: the session ingress a transport plugin names (tailcat: an encrypted overlay).
    """
    try:
        from ..memory import use_system_malloc

        use_system_malloc()  # re-executes under PYTHONMALLOC=malloc unless it is set (commonroom/memory.py)
        from ..server import ServeError, ServeOptions, serve  # gunicorn and falcon for this command only

        options = ServeOptions(document=file, host=host, port=port, owner_port=owner_port,
                               socket=socket, transport=transport, address=address, transport_port=transport_port,
                               allow_hosts=tuple(allow_host or ()), log_level=log_level)
        try:
            code = serve(options)
        except ServeError as exc:
            print(f"ce serve: {exc}", file=sys.stderr)
            raise typer.Exit(exc.code) from None
    except KeyboardInterrupt:  # Ctrl-C before the room took over its signals (while starting): no traceback
        print(f"room stopped: {file.expanduser().resolve()}", flush=True)
        raise typer.Exit(130) from None
    leave(code)


def leave(code: int) -> NoReturn:
    """End the stopped room's process with ``code``, skipping the interpreter's teardown.

    :func:`commonroom.server.serve` has already released everything it
    holds (the worker is gone, the state and owner-token files removed, the
    lock and the sockets closed). What Python would still do is free every
    module and object of a process about to end: ~0.2 s after each stop.
    The logs and the standard streams are flushed first.
    """
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed or broken stream: nothing left to keep
            pass
    os._exit(code)
