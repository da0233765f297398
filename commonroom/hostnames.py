"""The extra Host names the session listeners answer to (``ce serve --allow-host NAME``).

The Host rule at the edge (:mod:`commonroom.http.edge`) answers 421 to a
name that does not name the room on the listener a request arrived on. The
names people use for a machine on an overlay (a tailnet's MagicDNS name,
``tailscale serve`` forwarding with ``Host: <machine>.<tailnet>.ts.net``,
a name in ``/etc/hosts``) are not the listener's address, so the operator
adds them: each ``--allow-host NAME`` is answered on both session
listeners (the loopback ingress and a transport plugin's), never on the
owner port. A plugin may name more (:func:`plugin_names`: ``tailcat``
gives the machine's MagicDNS name when the ``tailscale`` command exists).

A name is a DNS host name: 1 to 253 bytes of letters, digits, ``-`` and
``.`` (labels of at most 63, no empty label), kept in lower case without
a trailing dot; an IP address or anything else is refused
(:class:`ValueError`).
"""

from __future__ import annotations

import ipaddress
import re
from typing import Any, Iterable

_LABEL = re.compile(r"^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$")


def host_name(name: str) -> str:
    """``name`` as the Host rule compares it (lower case, no trailing dot); ``ValueError`` unless a host name."""
    text = name.strip().lower().removesuffix(".")
    try:
        ipaddress.ip_address(text.strip("[]"))
    except ValueError:
        pass
    else:
        raise ValueError(f"--allow-host {name!r}: an address, not a name (the listener's own address is "
                         "always allowed)")
    if not text or len(text) > 253 or not all(_LABEL.match(label) for label in text.split(".")):
        raise ValueError(f"--allow-host {name!r}: not a host name (letters, digits, '-' and '.')")
    return text


def allowed(names: Iterable[str]) -> tuple[str, ...]:
    """The names, checked by :func:`host_name`, without duplicates, sorted."""
    return tuple(sorted({host_name(name) for name in names}))


def plugin_names(impl: Any) -> tuple[str, ...]:
    """The names a transport plugin says this machine has on its network (its optional ``host_names()``).

    A plugin without the method, or whose answer is not a host name,
    adds nothing (a wrong name is dropped, not fatal: the room starts).
    """
    method = getattr(impl, "host_names", None)
    if method is None:
        return ()
    found = []
    for name in method() or ():
        try:
            found.append(host_name(str(name)))
        except ValueError:
            continue
    return tuple(found)
