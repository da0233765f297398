"""The room's gunicorn application: what the worker builds after the fork.

:class:`RoomApplication` runs gunicorn in process with one ``asgi`` worker
(:class:`commonroom.worker.RoomWorker`) on the listeners
:mod:`commonroom.server` bound before the fork; :class:`WorkerConfig` is
what crosses the fork; :func:`build_app` builds the room in the worker:
its engine and apps (:func:`commonroom.room.build_room`), the edge over
both listeners with each listener's Host names, and the watch of the
transport plugins' listeners (:mod:`commonroom.listenwatch`).
"""

from __future__ import annotations

import gc
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gunicorn.app.base import BaseApplication

from .affinity import pin_worker
from .bodyguard import BodyGuard
from .worker import ConnectionLimits, RoomWorker

__all__ = ["RoomApplication", "WorkerConfig", "build_app"]


@dataclass(frozen=True)
class WorkerConfig:
    """What the worker needs to build the app (inherited across the fork)."""

    document: Path
    owner_port: int
    owner_token_hash: str
    limits: ConnectionLimits = ConnectionLimits()
    #: each transport plugin's listener: ``(address, port)`` as the worker sees it (the ASGI scope's
    #: ``server``), the Host rule's names for it being its own address (``commonroom.http.rules``)
    plugin_listeners: tuple[tuple[str, int], ...] = ()
    #: the loopback session ingress's ``(address, port)`` as bound (the scope's ``server``)
    ingress_listener: tuple[str, int] | None = None
    #: Host names both session listeners answer to besides their own (``ce serve --allow-host``); never the
    #: owner port's
    allow_hosts: tuple[str, ...] = ()
    #: each transport plugin's listener: ``(transport, address, port, interface)`` (``commonroom.listenwatch``)
    transports: tuple[tuple[str, str, int, str], ...] = ()

    def edge_names(self) -> dict[tuple[str, int], frozenset[str]]:
        """``(address, port)`` → the Host names that session listener answers to.

        A plugin listener: its address (``[v6]``) and :attr:`allow_hosts`;
        the loopback ingress: its own names (``listener_names``) and
        :attr:`allow_hosts`. Every other listener (the owner port) keeps
        the edge's default names.
        """
        from .http.rules import listener_names

        extra = frozenset(self.allow_hosts)
        names = {(address, port): frozenset({f"[{address}]" if ":" in address else address}) | extra
                 for address, port in self.plugin_listeners}
        if self.ingress_listener is not None and extra:
            names[self.ingress_listener] = listener_names(self.ingress_listener) | extra
        return names


def build_app(config: WorkerConfig) -> Any:
    """The ASGI app of the room, built inside the worker (after the fork): its edge
    (:class:`commonroom.http.edge.Edge`) over both listeners, each stack under the worker's ``BodyGuard``."""
    from .http.edge import Edge
    from .http.lifespan import Lifespan
    from .http.rules import HostNames
    from .listenwatch import ListenerWatch
    from .room import build_room
    from .transport_hints import plugin
    from .worker import listening_sockets

    pin_worker()  # both busy threads on one CPU, before they start (commonroom/affinity.py)
    engine, owner, ingress, hooks = build_room(config.document, config.owner_token_hash,
                                               names=HostNames(config.edge_names()))
    for listener in (owner, ingress):
        listener.app = BodyGuard(listener.app, config.limits.body_timeout)
    watch = ListenerWatch(config.transports, listening_sockets(), engine.listener_gone, plugin)
    watch.start()
    hooks.insert(0, watch.stop)
    # what the room built lives as long as the worker: out of every later collection's walk. No
    # collection first: a full one costs ~50 ms of every start for the few hundred objects of
    # start-up garbage it would find (they stay, frozen)
    gc.freeze()
    return Edge(owner, ingress, config.owner_port, Lifespan(hooks.startup, list(hooks)))


class RoomApplication(BaseApplication):
    """gunicorn, in process: one ``asgi`` worker on our pre-bound sockets."""

    def __init__(self, config: WorkerConfig, fds: list[int], options: Any):
        """``options``: the ``commonroom.server.ServeOptions`` of the run (its graceful timeout, log level)."""
        self.config = config
        self.fds = fds
        self.options = options
        super().__init__()

    def load_config(self) -> None:  # noqa: D102 - gunicorn hook
        settings = {
            "bind": [f"fd://{fd}" for fd in self.fds],
            "workers": 1,
            "worker_class": RoomWorker,  # gunicorn's asgi worker + read timeouts, connection bound
            "graceful_timeout": self.options.graceful_timeout,
            "timeout": 0,
            "keepalive": 5,
            "loglevel": self.options.log_level,
            "accesslog": None,
            "errorlog": "-",
            "control_socket_disable": True,
            "asgi_disconnect_grace_period": 1,
            # asyncio's own loop, whatever else is installed: gasgi's "auto" takes uvloop when it can
            # be imported, which the room is neither tested on nor faster on (docs/decisions.md)
            "asgi_loop": "asyncio",
            # and gunicorn's Python HTTP parser: "auto" would take the gunicorn_h1c extension when installed, whose
            # refusals (400, 414, 431) the hostile-input tests do not cover (docs/decisions.md: with this
            # worker's protocol subclass gunicorn 27.0.1 keeps the Python parser under "auto" anyway)
            "http_parser": "python",
            "proc_name": f"commonroom:{self.config.document.name}",
        }
        for key, value in settings.items():
            self.cfg.set(key, value)

    def load(self) -> Any:  # noqa: D102 - gunicorn hook
        return build_app(self.config)
