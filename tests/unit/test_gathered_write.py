"""A large body and its head in one gathered write (commonroom/worker.py ``GuardedProtocol._send_body``).

The room's protocol on a real asyncio transport over a real socket pair:
whatever the socket takes of the ``writev`` (all, part, or nothing when it
is full) and whatever the transport already holds, the peer reads the
head then the body, every byte once, in order. Where the kernel is asked
for what a socket pair will not do on cue (take part of the head, refuse
with a reset), ``os.writev`` is replaced by one that does.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
from types import SimpleNamespace
from typing import Any

import pytest

from commonroom.worker import LARGE_BODY_BYTES, GuardedProtocol

HEAD = b"HTTP/1.1 200 OK\r\ncontent-length: %d\r\n\r\n"


def _protocol(transport: asyncio.Transport) -> GuardedProtocol:
    """The room's protocol writing on ``transport`` (gunicorn's state for one answer, no worker behind it)."""
    worker = SimpleNamespace(cfg=SimpleNamespace(), log=logging.getLogger("test"), asgi=None)
    protocol = GuardedProtocol(worker)
    protocol.transport = transport
    return protocol


def _fill(sock: socket.socket) -> int:
    """Write to ``sock`` until it takes no more; the bytes written."""
    sent = 0
    while True:
        try:
            sent += sock.send(b"f" * 65536)
        except BlockingIOError:
            return sent


async def _exchange(body_size: int, *, full: bool, waiting: bytes = b"") -> tuple[bytes, bytes, int]:
    """Answer ``HEAD + body`` through ``_send_body`` on a socket pair; ``(bytes read, expected, filler bytes)``.

    ``full``: the socket takes nothing when the answer is written;
    ``waiting``: bytes the transport holds (written while the socket was
    full; the socket is then drained, so it has room when the answer is
    written, and only the transport's order keeps them first).
    """
    loop = asyncio.get_running_loop()
    ours, peer = socket.socketpair()
    ours.setblocking(False)
    transport, _ = await loop.create_connection(asyncio.Protocol, sock=ours)
    try:
        filler = _fill(ours) if full else 0
        if waiting:
            transport.write(waiting)
            peer.recv(filler, socket.MSG_WAITALL)  # room again, before the transport's next turn
            filler = 0
        body = os.urandom(body_size)
        head = HEAD % body_size
        protocol = _protocol(transport)  # type: ignore[arg-type]
        protocol._response_buffer = head
        protocol._send_body(body, size=len(body))
        expected = b"f" * filler + waiting + head + body
        peer.setblocking(False)
        got = bytearray()
        deadline = loop.time() + 5
        while len(got) < len(expected) and loop.time() < deadline:
            try:
                chunk = peer.recv(1 << 20)
            except BlockingIOError:
                await asyncio.sleep(0.001)  # the transport writes the rest as the socket drains
                continue
            assert chunk, "the peer's socket closed"
            got += chunk
        return bytes(got), expected, filler
    finally:
        transport.close()
        peer.close()


@pytest.mark.parametrize("body_size", [LARGE_BODY_BYTES, 3 * 1024 * 1024])
def test_the_socket_takes_all_or_part_and_the_transport_the_rest(body_size: int):
    got, expected, _ = asyncio.run(_exchange(body_size, full=False))
    assert got == expected


def test_a_full_socket_takes_nothing_and_the_transport_writes_head_then_body():
    got, expected, filler = asyncio.run(_exchange(LARGE_BODY_BYTES, full=True))
    assert filler > 0 and got == expected


def test_bytes_the_transport_holds_go_first():
    got, expected, _ = asyncio.run(_exchange(LARGE_BODY_BYTES, full=True, waiting=b"earlier answer"))
    assert got == expected


def test_a_small_body_is_gunicorns_joined_write():
    got, expected, _ = asyncio.run(_exchange(LARGE_BODY_BYTES - 1, full=False))
    assert got == expected


@pytest.mark.parametrize("taken", [1, 100, len(HEAD % LARGE_BODY_BYTES) - 1, len(HEAD % LARGE_BODY_BYTES),
                                   len(HEAD % LARGE_BODY_BYTES) + 1, 65535])
def test_a_socket_that_takes_part_of_the_head_or_just_past_it(monkeypatch: pytest.MonkeyPatch, taken: int):
    """The kernel may take any prefix of the gathered buffers: here exactly ``taken`` bytes of them."""
    def writev(fd: int, buffers: Any) -> int:
        return os.write(fd, b"".join(buffers)[:taken])
    monkeypatch.setattr(os, "writev", writev)
    got, expected, _ = asyncio.run(_exchange(LARGE_BODY_BYTES, full=False))
    assert got == expected


def test_a_socket_error_is_left_to_the_transport(monkeypatch: pytest.MonkeyPatch):
    """``writev`` refused (the peer reset): the transport's own write meets the socket as it always does."""
    def writev(fd: int, buffers: Any) -> int:
        raise ConnectionResetError(104, "Connection reset by peer")
    monkeypatch.setattr(os, "writev", writev)
    got, expected, _ = asyncio.run(_exchange(LARGE_BODY_BYTES, full=False))
    assert got == expected
