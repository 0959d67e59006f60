"""Per-user MCP servers: each user connects with their own token (checked, encrypted,
never served), their runs use it and nobody else's; DELETE revokes it."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from cryptography.fernet import Fernet
from sqlalchemy import select

from app.db.models import McpConnection
from app.tools.mcp.demo_server import RunningServer
from tests.conftest import make_api_user
from tests.orchestrator.support import OrchestratorApi
from tests.support.fake_llm import Call, Text, ToolCalls
from tests.support.mcp_servers import TOKEN, bearer_required, build_test_app, running
from tests.support.test_tools import register_test_tools, write_agent_types

URL = "/api/mcp/servers"
CONNECTION = f"{URL}/personal/connection"


@pytest.fixture(scope="module")
def personal_server() -> Iterator[RunningServer]:
    with running(bearer_required(build_test_app(), token=TOKEN)) as server:
        yield server


@pytest.fixture(scope="module")
def agent_types_file(
    tmp_path_factory: pytest.TempPathFactory, personal_server: RunningServer
) -> Path:
    register_test_tools()
    path = write_agent_types(tmp_path_factory.mktemp("mcp_personal_types"))
    data = yaml.safe_load(path.read_text())
    data["mcp_servers"]["personal"] = {
        "url": personal_server.url, "per_user": True, "tools": ["echo"],
        "description": "Your own notes service.",
    }  # fmt: skip
    data["agent_types"]["tester"]["mcp_servers"] = ["personal"]
    path.write_text(yaml.safe_dump(data))
    return path


@pytest.fixture(scope="module")
def settings_overrides() -> dict:
    return {"mcp_token_key": Fernet.generate_key().decode(), "mcp_demo_server": False}


async def _other(api: OrchestratorApi) -> OrchestratorApi:
    other = await make_api_user(api.db)
    other.agent.agent_type = "tester"
    await api.db.commit()
    return dataclasses.replace(api, user=other)


async def _echo(api: OrchestratorApi) -> dict:
    api.llm.script(ToolCalls(Call("personal__echo", {"text": "hi"})), Text("done"))
    thread_id, run = await api.turn("echo")
    assert run["status"] == "completed", run
    [cell] = [m["tool_activity"] for m in await api.tool_messages(thread_id)]
    return cell


async def test_connect_use_and_revoke(api: OrchestratorApi) -> None:
    listed = (await api.client.get(URL, headers=api.headers)).json()
    assert listed["enabled"] is True
    assert listed["items"] == [
        {"name": "personal", "description": "Your own notes service.", "connected": False,
         "connected_at": None,
         "tools": listed["items"][0]["tools"]},
    ]  # fmt: skip

    refused = await api.client.put(CONNECTION, json={"token": "wrong"}, headers=api.headers)
    assert refused.status_code == 422 and "refused the token" in refused.json()["detail"]
    assert refused.headers["content-type"].startswith("application/problem+json")

    connected = await api.client.put(CONNECTION, json={"token": TOKEN}, headers=api.headers)
    assert connected.status_code == 200, connected.text
    body = connected.json()
    assert body["connected"] and body["tools"] == ["personal__echo"]
    assert TOKEN not in connected.text
    row = (await api.db.execute(select(McpConnection))).scalar_one()
    assert row.user_id == api.user.user.id and TOKEN not in row.token_ciphertext

    cell = await _echo(api)
    assert cell["status"] == "success" and cell["data"]["text"] == "echo: hi"

    assert (await api.client.delete(CONNECTION, headers=api.headers)).status_code == 204
    cell = await _echo(api)
    assert cell["error_type"] == "permission_error" and "not connected" in cell["error"]
    assert (await api.client.delete(CONNECTION, headers=api.headers)).status_code == 404


async def test_a_connection_is_its_owners_alone(api: OrchestratorApi) -> None:
    assert (await api.client.put(CONNECTION, json={"token": TOKEN}, headers=api.headers)).is_success
    other = await _other(api)

    theirs = (await other.client.get(URL, headers=other.headers)).json()["items"]
    assert theirs[0]["connected"] is False  # A's connection is not B's
    cell = await _echo(other)  # B's run never uses A's token
    assert cell["error_type"] == "permission_error"
    assert (await other.client.delete(CONNECTION, headers=other.headers)).status_code == 404
    mine = (await api.client.get(URL, headers=api.headers)).json()["items"]
    assert mine[0]["connected"] is True  # B's DELETE did not touch A's


async def test_unknown_servers_and_bad_bodies_are_refused(api: OrchestratorApi) -> None:
    missing = await api.client.put(
        f"{URL}/nope/connection", json={"token": "x"}, headers=api.headers
    )
    assert missing.status_code == 404
    empty = await api.client.put(CONNECTION, json={"token": ""}, headers=api.headers)
    assert empty.status_code == 400
    extra = await api.client.put(CONNECTION, json={"token": "a", "x": 1}, headers=api.headers)
    assert extra.status_code == 400
    assert (await api.client.get(URL)).status_code == 401
