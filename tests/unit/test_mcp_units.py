"""Unit checks of the MCP adapter's pure parts (headers, origins, encoding, bundling)."""

from __future__ import annotations

import json

import pytest

from commonroom.bundle import bundle
from commonroom.mcp.dispatch import encode_tool_value, finish, tool_result
from commonroom.mcp.headers import decode_value
from commonroom.mcp.jsonrpc import JsonRpcError
from commonroom.mcp.skills import frontmatter
from commonroom.mcp.endpoint import origin_allowed


@pytest.mark.parametrize("raw,value", [
    ("tools/call", "tools/call"), ("  tools/call\t", "tools/call"),
    ("=?base64?w6k=?=", "é"), (" =?base64?aGk=?= ", "hi"),
    ("=?BASE64?aGk=?=", "=?BASE64?aGk=?="), ("", ""),
])
def test_decode_value(raw, value):
    assert decode_value("h", raw) == value


@pytest.mark.parametrize("raw", ["=?base64?***?=", "=?base64?/w==?=", "a\x01b", "é",
                                 "=?base64?w6k?=", "=?base64?SGVsbG8?=", "=?base64?SGVs!!!bG8=?="])
def test_decode_value_malformed(raw):
    with pytest.raises(JsonRpcError) as caught:
        decode_value("h", raw)
    assert (caught.value.code, caught.value.status) == (-32020, 400)


def test_origins():
    assert origin_allowed(None) and origin_allowed("http://localhost:5173") and origin_allowed("https://127.0.0.1")
    for bad in ("http://evil", "null", "http://localhost.evil", "ws://localhost", "http://localhost/x", "http://[::1]"):
        assert not origin_allowed(bad), bad


@pytest.mark.parametrize("value", [{"a": "é\n\"", "n": [1, None]}, [1, 2], "text", 3])
def test_encoded_result_equals_the_dict_form(value):
    assert json.loads(encode_tool_value(value)) == finish(tool_result(value))


def test_every_tool_schema_bundles_without_refs():
    from commonroom.mcp.tools import input_schema, output_schema
    from commonroom.operations import OPERATIONS

    assert OPERATIONS.tools()
    for op in OPERATIONS.tools():
        assert "$ref" not in json.dumps(input_schema(op)), op.name
        assert "$ref" not in json.dumps(output_schema(op)), op.name


def test_frontmatter():
    assert frontmatter("---\nname: x\ndescription: 'a: b'\n---\nbody") == {"name": "x", "description": "a: b"}
    assert frontmatter("no front matter") == {} and frontmatter("---\nname: x\n") == {}


def test_a_tool_schema_is_checked_unless_the_caller_checked_it():
    """A plugin's tool schema is checked against the 2020-12 metaschema when it is added; the
    operation table's tools (bundled from schema/, checked by test_mcp_discovery) say so and skip it."""
    from jsonschema import SchemaError

    from commonroom.mcp.registry import Registry

    broken = {"type": "object", "properties": {"a": {"type": 5}}}
    with pytest.raises(SchemaError):
        Registry().add_tool("plugin_tool", description="d", input_schema=broken, handler=lambda ctx: {})
    assert Registry().add_tool("table_tool", description="d", input_schema=broken, handler=lambda ctx: {},
                               checked=True).name == "table_tool"
