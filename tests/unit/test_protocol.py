"""commonroom.protocol: the wire constants pinned to the seeds, the header value codec, the leaf rule."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import commonroom
from commonroom import protocol
from commonroom.protocol import HeaderValueError, decode_header_value, encode_header_value


def test_pinned_values():
    """The one place the tests spell these values out (seed protocol.txt, MCP 2026-07-28)."""
    assert protocol.MCP_VERSION == "2026-07-28"
    assert protocol.MCP_SUPPORTED_VERSIONS == ("2026-07-28",)
    assert (protocol.COMMONROOM_PROTOCOL, protocol.COMMONROOM_PROTOCOL_VERSION) == ("commonroom", "1")
    assert (commonroom.PROTOCOL, commonroom.PROTOCOL_VERSION) == ("commonroom", "1")
    assert protocol.MAX_BODY_BYTES == 8 * 1024 * 1024
    assert (protocol.VERSION_HEADER, protocol.METHOD_HEADER, protocol.NAME_HEADER) == (
        "MCP-Protocol-Version", "Mcp-Method", "Mcp-Name")
    assert protocol.NAME_PARAMS == {"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}
    assert protocol.CLIENT_NAME_PARAMS["tasks/get"] == "taskId"
    assert protocol.SSE_RETRY_MS == 5000


def test_the_module_is_a_leaf():
    """It imports nothing from commonroom (http/ and mcp/ both import it)."""
    tree = ast.parse(Path(protocol.__file__).read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            assert node.level == 0 and not (node.module or "").startswith("commonroom"), ast.dump(node)
        elif isinstance(node, ast.Import):
            assert not any(alias.name.startswith("commonroom") for alias in node.names)


@pytest.mark.parametrize("value", ["tools/call", "a b", "", "=?BASE64?aGk=?="])
def test_plain_values_stay_plain(value):
    assert encode_header_value(value) == value == decode_header_value(value)


@pytest.mark.parametrize("value", ["Zürich", "日本語", " lead", "trail ", "tab\there", "cr\r\nlf", "=?base64?abc?="])
def test_wrapped_values_round_trip(value):
    wrapped = encode_header_value(value)
    assert wrapped.startswith("=?base64?") and wrapped.endswith("?=") and wrapped.isascii()
    assert decode_header_value(wrapped) == value


def test_blanks_around_a_value_are_ignored():
    assert decode_header_value(" \t=?base64?aGk=?= ") == "hi"


@pytest.mark.parametrize("raw", ["=?base64?w6k?=", "=?base64?SGVsbG8?=", "=?base64?***?=", "=?base64?/w==?=",
                                 "a\x01b", "é"])
def test_malformed_values(raw):
    """Unpadded base64 (SEP-2243), non-base64, non-UTF-8, control and non-ASCII characters."""
    with pytest.raises(HeaderValueError):
        decode_header_value(raw)


def test_mirrored_arguments():
    schema = {"type": "object", "properties": {"region": {"type": "string", "x-mcp-header": "Region"},
                                               "n": {"type": "integer"}, "bad": {"x-mcp-header": 3}}}
    assert protocol.mirrored_arguments(schema) == {"region": "Region"}
    assert protocol.mirrored_arguments(None) == {} == protocol.mirrored_arguments({"properties": []})
    assert protocol.param_header("Region") == "Mcp-Param-Region"
