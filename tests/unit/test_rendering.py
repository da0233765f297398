"""The document as HTML for people (commonroom.rendering): nothing runs, lines and anchors as regions see them."""

from __future__ import annotations

import re

import pytest

from commonroom import invitation, regions, rendering
from commonroom.errors import InvalidRequest
from tests.roomproc import corpus_files


def test_raw_html_and_unsafe_links_stay_text():
    html, _ = rendering.render("# T <b>x</b>\n\n<script>alert(1)</script>\n\n<img src=x onerror=alert(2)>\n\n"
                               "[a](javascript:alert(3)) [b](vbscript:x) ![c](data:text/html,x)\n")
    assert "<script" not in html and "<img src=x" not in html and "<b>" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "javascript:" not in html.replace("[a](javascript:alert(3))", "") and 'href="vbscript' not in html
    assert "<img" not in html  # a data: image of text/html is not an image either


def test_blocks_carry_their_first_line_and_headings_an_anchor():
    text = "---\ntitle: x\n---\n# Intro\n\nSome text.\n\n```py\n# not a heading\n```\n## Intro\nSetext\n======\n"
    html, headings = rendering.render(text)
    assert '<pre class="front-matter" data-line="1">' in html
    assert '<h1 data-line="4" id="h-intro">' in html and '<p data-line="6">' in html
    assert '<h2 data-line="11" id="h-intro-1">' in html and '<h1 data-line="12" id="h-setext">' in html
    assert [(h["line"], h["end_line"], h["path"], h["anchor"]) for h in headings] == [
        (4, 11, ["Intro"], "h-intro"), (11, 11, ["Intro", "Intro"], "h-intro-1"), (12, 13, ["Setext"], "h-setext")]


@pytest.mark.parametrize("path", corpus_files(), ids=lambda p: p.name)
def test_headings_are_the_regions_headings_and_chunks_change_nothing(path):
    text = path.read_text(encoding="utf-8")
    html, headings = rendering.render(text)
    assert rendering.outline(text) == headings
    assert [(h["line"], h["end_line"], h["path"]) for h in headings] == \
        [(h.line, h.end_line, list(h.path)) for h in regions.headings(text)]
    whole = rendering._MD.render(text) if not text.startswith("---") else None
    if whole is not None and "\r" not in text and not text.startswith(regions.BOM):
        plain = rendering._LINE_ATTR.sub("", html)
        plain = re.sub(r' id="h-[^"]*"', "", plain).replace(' >', '>').replace(" />", "/>")
        assert plain.replace(" ", "") == whole.replace(" />", "/>").replace(" ", "")


def test_a_link_carries_the_invitation_in_its_fragment():
    token = invitation.encode({"protocol": "commonroom", "version": "1", "workspace_id": "w_1",
                               "secret": "s" * 20, "expires_at": "2030-01-01T00:00:00.000000+00:00", "capabilities": ["read"],
                               "transport": {"type": "tailcat", "address": "fd7a::1", "port": 7000,
                                             "encrypted": True, "mode": "private"}})
    link = invitation.page_link(token)
    assert link == "http://[fd7a::1]:7000/#join=" + token[len(invitation.PREFIX):]
    local = invitation.encode({**invitation.decode(token), "transport": {
        "type": "local", "address": "/tmp/room.sock", "port": None, "encrypted": False, "mode": "local"}})
    with pytest.raises(InvalidRequest) as refused:
        invitation.page_link(local)
    assert refused.value.details["reason"] == "transport"
