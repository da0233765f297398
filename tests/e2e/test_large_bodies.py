"""Large answers on one keep-alive connection (commonroom/worker.py ``GuardedProtocol._send_body``).

A body of ``LARGE_BODY_BYTES`` or more goes out with its head in one ``writev``; the
bytes on the wire, their framing and the answers after them on the same
connection must be exactly as before: a 963 KB document, an old version of
it, gzip, a 304 and a small answer, in turn on one socket.
"""

from __future__ import annotations

import gzip
import json
import time
from pathlib import Path

from commonroom.worker import LARGE_BODY_BYTES
from tests.bench.load import KeepAlive, request_bytes
from tests.roomproc import CORPUS, start_room

SOURCE = CORPUS / "angular-cli-CHANGELOG.md"


def test_large_bodies_and_what_follows_them_on_one_connection(tmp_path: Path):
    text = SOURCE.read_text("utf-8")
    room = start_room(tmp_path, SOURCE, name=SOURCE.name)
    try:
        writer = room.join("ana", "read,write")
        head = writer.get("/workspace/document").json()
        writer.request("PUT", "/workspace/document", json={"expected_version": head["version"], "text": "edited\n",
                                                         "region": {"lines": [1, 1]}}).raise_for_status()
        http = KeepAlive(room.ingress, receive_buffer=65536)  # the server's writes must wait
        auth = {"Authorization": f"Bearer {writer.token}"}
        plain = {**auth, "Accept-Encoding": "identity"}
        for _ in range(2):
            status, headers, body = http.call(request_bytes("GET", f"/workspace/versions/{head['version']}", plain))
            assert status == 200 and len(body) >= LARGE_BODY_BYTES
            assert int(headers["content-length"]) == len(body) and json.loads(body)["text"] == text
            status, headers, body = http.call(request_bytes("GET", "/workspace/document", plain))
            assert status == 200 and json.loads(body)["text"] == "edited\n" + text.split("\n", 1)[1]
            etag = headers["etag"]
            status, headers, zipped = http.call(request_bytes("GET", "/workspace/document",
                                                              {**auth, "Accept-Encoding": "gzip"}))
            assert status == 200 and headers["content-encoding"] == "gzip" and gzip.decompress(zipped) == body
            status, _, nothing = http.call(request_bytes("GET", "/workspace/document", {**plain, "If-None-Match": etag}))
            assert status == 304 and nothing == b""
            status, _, small = http.call(request_bytes("GET", "/workspace/versions?limit=1", plain))
            assert status == 200 and json.loads(small)["versions"][0]["number"] == head["version"] + 1
        http.close()
    finally:
        room.stop()


def test_pipelined_large_answers_to_a_slow_reader_keep_their_bytes_and_order(tmp_path: Path):
    """Answers written while the socket is full: the gathered write takes part or nothing, the transport the rest."""
    text = SOURCE.read_text("utf-8")
    room = start_room(tmp_path, SOURCE, name=SOURCE.name)
    try:
        reader = room.join("ana", "read")
        number = reader.get("/workspace/document").json()["version"]
        plain = {"Authorization": f"Bearer {reader.token}", "Accept-Encoding": "identity"}
        paths = [f"/workspace/versions/{number}", "/workspace/versions?limit=1", "/workspace/document"] * 4
        http = KeepAlive(room.ingress, receive_buffer=4096)  # a small window
        http.sock.sendall(b"".join(request_bytes("GET", path, plain) for path in paths))
        try:
            for i, path in enumerate(paths):
                time.sleep(0.05 if i % 3 == 0 else 0)  # the server's socket fills while nothing is read
                status, _, body = http.answer()
                assert status == 200, (path, bytes(body[:200]))
                if path == "/workspace/versions?limit=1":
                    assert json.loads(body)["versions"][0]["number"] == number
                else:
                    assert json.loads(body)["text"] == text
        finally:
            http.close()
    finally:
        room.stop()
