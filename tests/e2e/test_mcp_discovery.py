"""Discovery and the catalog: ``server/discover``, the lists, tool schemas, skills.

Discover exactly as the seed says and nothing secret;
every result carries resultType and serverInfo; cacheable ones ttlMs and
cacheScope; every tool's schemas are self-contained JSON Schemas.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import httpx
import pytest
from jsonschema import Draft202012Validator

from commonroom.operations import OPERATIONS
from commonroom.protocol import MCP_VERSION
from tests.mcp_schema import check
from tests.mcp_wire import Mcp

#: The tools are the table's MCP bindings; these must be among them.
CORE_TOOLS = {
    "workspace_status", "document_read", "participants_list", "versions_list", "version_get", "versions_diff",
    "lease_acquire", "lease_renew", "lease_release", "leases_list", "proposal_create", "proposals_list",
    "proposal_get", "proposal_approve", "proposal_reject", "proposal_withdraw", "document_write",
    "workspace_history",
}
EXPECTED_TOOLS = {op.name for op in OPERATIONS.tools()}
SKILL_MD = Path(__file__).resolve().parents[2] / "commonroom" / "skills" / "commonroom" / "SKILL.md"


@pytest.fixture(scope="module")
def joined(shared_room):
    client = shared_room.join("discovery-tester", "read")
    caller = Mcp(shared_room.ingress, client.token)
    yield shared_room, client, caller
    caller.close()


@pytest.fixture(scope="module")
def mcp(joined):
    return joined[2]


def _server_info(result):
    assert result["resultType"] == "complete"
    assert result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "commonroom"
    assert result["_meta"]["io.modelcontextprotocol/serverInfo"]["version"]


def test_discover_is_the_seeds(mcp):
    r = mcp.post("server/discover")
    check("DiscoverResultResponse", r.json())
    result = r.json()["result"]
    check("DiscoverResult", result)
    _server_info(result)
    assert result["supportedVersions"] == [MCP_VERSION]
    assert result["cacheScope"] == "public"
    assert isinstance(result["ttlMs"], int) and result["ttlMs"] >= 0
    assert result["capabilities"] == {
        "tools": {}, "prompts": {}, "resources": {"subscribe": True}, "completions": {},
        "extensions": {"io.modelcontextprotocol/skills": {}, "io.modelcontextprotocol/tasks": {}},
    }
    assert "serverInfo" not in result
    assert "listChanged" not in json.dumps(result)


def test_discover_has_no_secrets_ids_or_addresses(joined):
    room, client, mcp = joined
    text = mcp.post("server/discover").text
    state = room.state
    forbidden = [client.token, client.session["id"], room.owner_token, state["workspace_id"],
                 str(state["ingress"]["port"]), str(state["owner_port"]), "commonroom://join/", "cr_",
                 "s_", "127.0.0.1", "localhost", "secret"]
    for value in forbidden:
        assert value not in text, value


def test_discover_same_for_every_session(joined):
    room, _, mcp = joined
    other = Mcp(room.ingress, room.join("discovery-other", "read,write,approve").token)
    assert other.post("server/discover").json()["result"] == mcp.post("server/discover").json()["result"]
    other.close()


def test_tools_list(mcp):
    r = mcp.post("tools/list")
    check("ListToolsResultResponse", r.json())
    result = r.json()["result"]
    check("ListToolsResult", result)
    _server_info(result)
    assert result["cacheScope"] == "public" and result["ttlMs"] >= 0
    names = [t["name"] for t in result["tools"]]
    assert set(names) == EXPECTED_TOOLS and CORE_TOOLS <= EXPECTED_TOOLS
    assert len(names) == len(set(names))


@pytest.mark.parametrize("name", sorted(EXPECTED_TOOLS))
def test_tool_schemas_self_contained(mcp, name):
    tool = next(t for t in mcp.result("tools/list")["tools"] if t["name"] == name)
    check("Tool", tool)
    assert tool["description"] and tool["annotations"]["title"]
    for key in ("inputSchema", "outputSchema"):
        schema = tool[key]
        assert schema["type"] == "object"
        assert "$ref" not in json.dumps(schema), key
        Draft202012Validator.check_schema(schema)
    # An empty registry: a stray $ref would fail to resolve.
    Draft202012Validator(tool["inputSchema"]).iter_errors({})
    error_object = {"error": "permission_denied", "message": "m", "details": {}}
    assert Draft202012Validator(tool["outputSchema"]).is_valid(error_object)


def test_cursor_on_lists_is_invalid(mcp):
    r = mcp.post("tools/list", {"cursor": "abc"})
    assert r.status_code == 200
    check("JSONRPCErrorResponse", r.json())
    assert r.json()["error"]["code"] == -32602


def test_resources_list(mcp):
    result = mcp.result("resources/list")
    check("ListResourcesResult", result)
    _server_info(result)
    assert result["cacheScope"] == "public"
    by_uri = {r["uri"]: r for r in result["resources"]}
    assert set(by_uri) == {
        "commonroom://workspace/status", "commonroom://workspace/document", "commonroom://workspace/proposals",
        "commonroom://workspace/leases", "commonroom://workspace/participants", "skill://commonroom/SKILL.md",
    }
    assert by_uri["commonroom://workspace/document"]["mimeType"] == "text/markdown"
    assert by_uri["skill://commonroom/SKILL.md"]["mimeType"] == "text/markdown"
    assert by_uri["skill://commonroom/SKILL.md"]["name"] == "commonroom"


def test_templates_list(mcp):
    result = mcp.result("resources/templates/list")
    check("ListResourceTemplatesResult", result)
    _server_info(result)
    assert result["cacheScope"] == "public"
    assert [t["uriTemplate"] for t in result["resourceTemplates"]] == [
        "commonroom://workspace/proposals?cursor={cursor}", "commonroom://workspace/leases?cursor={cursor}",
        "commonroom://workspace/participants?cursor={cursor}", "commonroom://workspace/versions/{number}"]


def test_prompts_list(mcp):
    result = mcp.result("prompts/list")
    check("ListPromptsResult", result)
    _server_info(result)
    assert result["cacheScope"] == "public"
    prompts = {p["name"]: p for p in result["prompts"]}
    assert set(prompts) == {"review_proposal", "summarize_changes", "draft_section"}
    assert [a["name"] for a in prompts["review_proposal"]["arguments"]] == ["proposal_id"]
    assert prompts["summarize_changes"]["arguments"][0]["required"] is True


# -- skills ---------------------------------------------------------------------

def test_skill_md_frontmatter():
    text = SKILL_MD.read_text("utf-8")
    assert text.startswith("---\nname: commonroom\ndescription: ")
    for word in ("join", "lease_acquire", "proposal_create", "stale_version", "proposal_approve", "rebase"):
        assert word in text


def test_skills_list_and_get(mcp):
    listed = mcp.result("skills/list")
    _server_info(listed)
    assert listed["cacheScope"] == "public" and listed["ttlMs"] >= 0
    [skill] = listed["skills"]
    data = SKILL_MD.read_bytes()
    assert skill == {
        "uri": "skill://commonroom/SKILL.md",
        "frontmatter": {"name": "commonroom", "description": skill["frontmatter"]["description"]},
        "resources": [{"uri": "skill://commonroom/SKILL.md",
                       "digest": "sha256:" + hashlib.sha256(data).hexdigest(), "size": len(data)}],
    }
    got = mcp.result("skills/get", {"uri": "skill://commonroom/SKILL.md"})
    _server_info(got)
    assert got["skill"] == skill and got["cacheScope"] == "public"
    got = mcp.result("skills/get", {"uri": "skill://commonroom/SKILL.md"},
                     headers={"Mcp-Name": "skill://commonroom/SKILL.md"})
    assert got["skill"] == skill


def test_skills_get_unknown_and_name_header(mcp):
    r = mcp.post("skills/get", {"uri": "skill://nope/SKILL.md"})
    assert r.status_code == 200 and r.json()["error"]["code"] == -32602
    r = mcp.post("skills/get", {"uri": "skill://commonroom/SKILL.md"}, headers={"Mcp-Name": "skill://x/SKILL.md"})
    assert r.status_code == 400 and r.json()["error"]["code"] == -32020


def test_skill_resource_read(mcp):
    uri = "skill://commonroom/SKILL.md"
    result = mcp.result("resources/read", {"uri": uri})
    check("ReadResourceResult", result)
    assert result["contents"] == [{"uri": uri, "text": SKILL_MD.read_text("utf-8"), "mimeType": "text/markdown"}]
    assert result["cacheScope"] == "public"


def test_discover_needs_no_capability_but_a_bearer(joined):
    room, _, _ = joined
    nothing = Mcp(room.ingress, room.join("discovery-nocaps", "message").token)
    assert nothing.post("server/discover").status_code == 200
    assert httpx.post(nothing.url, json=nothing.body("server/discover"),
                      headers=nothing.headers("server/discover", None) | {"Authorization": ""}).status_code == 401
    nothing.close()


def test_docs_name_every_tool_resource_prompt_and_deviation(mcp):
    docs = (Path(__file__).resolve().parents[2] / "docs" / "mcp.md").read_text("utf-8")
    names = [t["name"] for t in mcp.result("tools/list")["tools"]]
    names += [r["uri"] for r in mcp.result("resources/list")["resources"]]
    names += [t["uriTemplate"] for t in mcp.result("resources/templates/list")["resourceTemplates"]]
    names += [p["name"] for p in mcp.result("prompts/list")["prompts"]]
    names += ["resources/subscribe", "resources/unsubscribe", "skills/list", "skills/get", "GET /mcp",
              "COMMONROOM_MCP_PLUGINS", "Seed deviations", "-32020", "-32022", "-32601", "-32602", "-31000"]
    missing = [n for n in names if n not in docs]
    assert not missing, missing
