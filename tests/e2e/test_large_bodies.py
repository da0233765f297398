"""Large answers on one keep-alive connection (commonroom/worker.py ``GuardedProtocol._send_body``).

A body of ``LARGE_BODY_BYTES`` or more is written apart from its head; the
bytes on the wire, their framing and the answers after them on the same
connection must be exactly as before: a 963 KB document, an old version of
it, gzip, a 304 and a small answer, in turn on one socket.
"""

from __future__ import annotations

import gzip
import json
import socket
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
        http = KeepAlive(room.ingress)
        http.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)  # the server's writes must wait
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
