"""Document reads over HTTP: ETag, If-None-Match (304) and gzip, through a real room.

``GET /workspace/document`` and ``GET /workspace/versions/{n}`` answer from
per-version encoded answers (commonroom/http/answers.py): the bytes are the
same JSON as before, the ETag is the content hash, a matching
``If-None-Match`` gets 304, ``Accept-Encoding: gzip`` gets the gzip bytes.
Authentication and the capability check still come first.
"""

from __future__ import annotations

import gzip
import json

import httpx

from commonroom import schemas
from commonroom.wire import dumps

PLAIN = {"Accept-Encoding": "identity"}

class Raw:
    """A response whose ``content`` is the bytes on the wire (gzip stays gzip)."""

    def __init__(self, response: httpx.Response, content: bytes):
        self.status_code, self.headers, self.content = response.status_code, response.headers, content


def raw(client, path: str, **headers: str) -> Raw:
    """A GET of ``path`` with ``client``'s bearer and ``headers``, body not decoded."""
    with httpx.Client(timeout=30) as http:
        request = http.build_request("GET", client.room.ingress + path,
                                     headers={"Authorization": f"Bearer {client.token}", **headers})
        response = http.send(request, stream=True)
        content = b"".join(response.iter_raw())
        response.close()
        return Raw(response, content)

def test_document_etag_304_and_gzip(room):
    ana = room.join("ana", "read,write")
    first = raw(ana, "/workspace/document", **PLAIN)
    assert first.status_code == 200
    answer = json.loads(first.content)
    assert schemas.errors_of("room#Document", answer) == []
    assert first.content == dumps(answer)  # the same compact JSON as before
    assert first.headers["ETag"] == f'"{answer["content_hash"]}"'
    assert first.headers["Vary"] == "Accept-Encoding"
    assert "Content-Encoding" not in first.headers

    again = raw(ana, "/workspace/document", **PLAIN, **{"If-None-Match": first.headers["ETag"]})
    assert again.status_code == 304 and again.content == b""
    assert again.headers["ETag"] == first.headers["ETag"]
    stale = raw(ana, "/workspace/document", **PLAIN, **{"If-None-Match": '"sha256:0000"'})
    assert stale.status_code == 200 and stale.content == first.content

    zipped = raw(ana, "/workspace/document", **{"Accept-Encoding": "gzip"})
    assert zipped.status_code == 200 and zipped.headers["Content-Encoding"] == "gzip"
    assert gzip.decompress(zipped.content) == first.content
    assert zipped.headers["ETag"] == f'"{answer["content_hash"]}-gzip"'
    refused = raw(ana, "/workspace/document", **{"Accept-Encoding": "gzip;q=0"})
    assert "Content-Encoding" not in refused.headers and refused.content == first.content
    both = raw(ana, "/workspace/document", **{"Accept-Encoding": "gzip", "If-None-Match": first.headers["ETag"]})
    assert both.status_code == 304

    # a commit moves the head: the old tag no longer matches, the new answer is the new text
    write = ana.request("PUT", "/workspace/document",
                        json={"expected_version": answer["version"], "text": "# New\n\nbody\n"})
    assert write.status_code == 200, write.text
    moved = raw(ana, "/workspace/document", **PLAIN, **{"If-None-Match": first.headers["ETag"]})
    assert moved.status_code == 200
    assert json.loads(moved.content)["text"] == "# New\n\nbody\n"
    assert moved.headers["ETag"] != first.headers["ETag"]

    # a region's answer has its own bytes under the same head
    region = raw(ana, "/workspace/document?region=" + json.dumps({"lines": [1, 1]}), **PLAIN)
    assert region.status_code == 200 and json.loads(region.content)["text"] == "# New\n"
    assert region.headers["ETag"] == moved.headers["ETag"]

def test_version_etag_and_auth_first(room):
    ana = room.join("ana", "read,write")
    head = ana.get("/workspace/document").json()
    ana.request("PUT", "/workspace/document", json={"expected_version": head["version"], "text": "two\n"})
    old = raw(ana, f"/workspace/versions/{head['version']}", **PLAIN)
    assert old.status_code == 200
    info = json.loads(old.content)
    assert info["text"] == head["text"] and old.headers["ETag"] == f'"{head["content_hash"]}"'
    assert schemas.errors_of("editing#VersionInfo", info) == []
    cached = raw(ana, f"/workspace/versions/{head['version']}", **{"If-None-Match": old.headers["ETag"]})
    assert cached.status_code == 304
    zipped = raw(ana, f"/workspace/versions/{head['version']}", **{"Accept-Encoding": "gzip"})
    assert gzip.decompress(zipped.content) == old.content

    # no bearer, or no read capability: refused before the cache answers
    anon = httpx.get(room.ingress + f"/workspace/versions/{head['version']}",
                     headers={"If-None-Match": old.headers["ETag"]}, timeout=30)
    assert anon.status_code == 401
    mute = room.join("mute", "observe")
    denied = mute.get("/workspace/document", headers={"If-None-Match": old.headers["ETag"]})
    assert denied.status_code == 403
    missing = ana.get("/workspace/versions/999")
    assert missing.status_code == 404 and "ETag" not in missing.headers
