"""``commonroom.jsontext.loads``: what it accepts is ``json.loads``'s answer; what it refuses, and why."""

from __future__ import annotations

import json

import pytest

from commonroom import jsontext

ACCEPTED = ['{"a": 1, "b": [1.5, "ü", null, true]}', "[]", '"\\u00e9"', "12345678901234567890", "-0.5e3"]


@pytest.mark.parametrize("text", ACCEPTED)
def test_what_it_accepts_parses_as_json_loads_does(text):
    assert jsontext.loads(text) == json.loads(text)
    assert jsontext.loads(text.encode("utf-8")) == json.loads(text)


@pytest.mark.parametrize("data", ["\ufeff{}", "\ufeff{}".encode("utf-8")])
def test_a_leading_bom_is_refused_in_json_loads_words(data):
    with pytest.raises(jsontext.NotJson, match="Unexpected UTF-8 BOM"):
        jsontext.loads(data)


@pytest.mark.parametrize("text, reason", [
    ("NaN", "strict JSON has no NaN"),
    ("[-Infinity]", "strict JSON has no NaN"),
    ("1e400", "too large for a number"),
    ("123456789012345678901", "longer than 20"),
    ("[" * 70 + "]" * 70, "nested deeper than 64"),
    ('"\\ud800"', "lone UTF-16 surrogate"),
    ("[1,2", "delimiter"),
])
def test_what_it_refuses_says_why(text, reason):
    with pytest.raises(jsontext.NotJson, match=reason):
        jsontext.loads(text)


def test_bytes_that_are_not_utf8_are_refused():
    with pytest.raises(jsontext.NotJson, match="not UTF-8"):
        jsontext.loads(b'{"a": "\xff"}')
