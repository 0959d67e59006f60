"""Per-user MCP servers connected through OAuth 2.1 (authorization code + PKCE): the API
hands out the authorization URL, the callback stores the tokens, calls use (and refresh)
them, DELETE revokes them. Against a real OAuth-protected MCP server and its own
authorization server (both the official SDK's, on sockets; tests/support/mcp_oauth.py)."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
import yaml
from cryptography.fernet import Fernet
from sqlalchemy import func, select, update

from app.connections import oauth_refresh
from app.connections.oauth_discovery import Challenge, OAuthUnavailable, discover
from app.connections.vault import Vault
from app.db import clock
from app.db.models import McpConnection, McpOAuthState
from app.lib.time import utcnow
from app.settings import Settings
from app.tools.mcp_config import McpServerSpec
from tests.conftest import make_api_user
from tests.orchestrator.support import OrchestratorApi
from tests.support.fake_llm import Call, Text, ToolCalls
from tests.support.mcp_oauth import OAuthWorld, oauth_world
from tests.support.test_tools import register_test_tools, write_agent_types

URL = "/api/mcp/servers"
START = f"{URL}/notes/oauth/start"
RETURN_URL = "toolcells://mcp-oauth"


@pytest.fixture(scope="module")
def world() -> Iterator[OAuthWorld]:
    with oauth_world() as running:
        yield running


@pytest.fixture(scope="module")
def agent_types_file(tmp_path_factory: pytest.TempPathFactory, world: OAuthWorld) -> Path:
    register_test_tools()
    path = write_agent_types(tmp_path_factory.mktemp("mcp_oauth_types"))
    data = yaml.safe_load(path.read_text())
    data["mcp_servers"]["notes"] = {"url": world.mcp.url, "per_user": True}
    data["agent_types"]["tester"]["mcp_servers"] = ["notes"]
    path.write_text(yaml.safe_dump(data))
    return path


@pytest.fixture(scope="module")
def settings_overrides() -> dict:
    return {
        "mcp_token_key": Fernet.generate_key().decode(),
        "mcp_demo_server": False,
        # the authorization server is on 127.0.0.1: private, so allowed by name
        "mcp_oauth_allow_hosts": ("127.0.0.1",),
        "mcp_oauth_return_url": RETURN_URL,
    }


async def _authorize(api: OrchestratorApi) -> str:
    """Start, then do what the browser does at the authorization server: the callback URL
    (with code and state) it is sent back to."""
    started = await api.client.post(START, headers=api.headers)
    assert started.status_code == 200, started.text
    url = started.json()["authorization_url"]
    query = parse_qs(urlsplit(url).query)
    assert query["code_challenge_method"] == ["S256"] and query["resource"]
    async with httpx.AsyncClient() as browser:
        at_server = await browser.get(url)
    assert at_server.status_code == 302, at_server.text
    return at_server.headers["location"]


async def _callback(api: OrchestratorApi, location: str) -> httpx.Response:
    parts = urlsplit(location)
    assert parts.path == "/api/mcp/oauth/callback"
    return await api.client.get(f"{parts.path}?{parts.query}")  # no bearer: the state binds it


async def _connect(api: OrchestratorApi) -> None:
    done = await _callback(api, await _authorize(api))
    assert done.status_code == 303, done.text
    assert done.headers["location"] == f"{RETURN_URL}?server=notes&status=connected"


async def _whoami(api: OrchestratorApi) -> dict:
    api.llm.script(ToolCalls(Call("notes__whoami", {})), Text("done"))
    thread_id, run = await api.turn("who am I there?")
    assert run["status"] == "completed", run
    [cell] = [m["tool_activity"] for m in await api.tool_messages(thread_id)]
    return cell


async def _other(api: OrchestratorApi) -> OrchestratorApi:
    other = await make_api_user(api.db)
    other.agent.agent_type = "tester"
    await api.db.commit()
    return dataclasses.replace(api, user=other)


async def test_connect_call_refresh_and_revoke(api: OrchestratorApi, world: OAuthWorld) -> None:
    await _connect(api)
    listed = (await api.client.get(URL, headers=api.headers)).json()["items"]
    assert listed[0]["connected"] and listed[0]["tools"] == ["notes__whoami"]
    row = (await api.db.execute(select(McpConnection))).scalar_one()
    secrets = [*world.authority.access, *world.authority.refresh]
    assert not any(s in row.token_ciphertext + (row.oauth_ciphertext or "") for s in secrets)

    cell = await _whoami(api)
    assert cell["status"] == "success", cell
    subject = cell["data"]["text"]
    assert subject.startswith("you are user-")

    # Revoked early at the server (here it still looks fresh): its 401 makes the call
    # refresh the token once and try again.
    world.authority.expire_access_tokens()
    before = world.authority.refreshed
    cell = await _whoami(api)
    assert cell["status"] == "success" and cell["data"]["text"] == subject
    assert world.authority.refreshed == before + 1

    # An hour later: the access token has expired (there and here); the call refreshes first.
    world.authority.expire_access_tokens()
    await api.db.execute(update(McpConnection).values(expires_at=utcnow()))
    await api.db.commit()
    before = world.authority.refreshed
    cell = await _whoami(api)
    assert cell["status"] == "success" and cell["data"]["text"] == subject
    assert world.authority.refreshed == before + 1

    assert (
        await api.client.delete(f"{URL}/notes/connection", headers=api.headers)
    ).status_code == 204
    assert world.authority.revoked  # the grant ended at the authorization server
    assert not [t for t in world.authority.access.values() if f"you are {t.subject}" == subject]
    cell = await _whoami(api)
    assert cell["error_type"] == "permission_error" and "not connected" in cell["error"]


async def _expire(api: OrchestratorApi, world: OAuthWorld, claimed_for: float) -> McpConnection:
    """The access token expired (there and here), and the row claimed for a refresh
    `claimed_for` seconds more (as another process does; < 0: a claim left to lapse)."""
    world.authority.expire_access_tokens()
    claim = clock.now() + timedelta(seconds=claimed_for)
    await api.db.execute(
        update(McpConnection).values(expires_at=utcnow(), refresh_claimed_until=claim)
    )
    await api.db.commit()
    return (await api.db.execute(select(McpConnection))).scalar_one()


async def test_one_refresh_across_processes(
    api: OrchestratorApi, world: OAuthWorld, session_factory
) -> None:
    """While another process refreshes the grant (its claim on the row), a call here waits
    for that process's token rather than spend the refresh token a second time; a claim
    whose holder died lapses, and the next call refreshes."""
    await _connect(api)
    subject = (await _whoami(api))["data"]["text"]
    row = await _expire(api, world, claimed_for=60)
    before = world.authority.refreshed
    call = asyncio.create_task(_whoami(api))
    await asyncio.sleep(1)  # the call waits on the claim
    assert not call.done() and world.authority.refreshed == before
    settings = api.app.state.settings
    vault = Vault(settings.mcp_token_key)
    # the other process's refresh ends: its token stored, its claim released
    assert await oauth_refresh._refresh(session_factory, settings, row, vault)
    cell = await call
    assert cell["status"] == "success" and cell["data"]["text"] == subject
    assert world.authority.refreshed == before + 1

    await _expire(api, world, claimed_for=-1)  # its holder is gone
    cell = await _whoami(api)
    assert cell["status"] == "success" and cell["data"]["text"] == subject
    assert world.authority.refreshed == before + 2
    row = (await api.db.execute(select(McpConnection))).scalar_one()
    await api.db.refresh(row)
    assert row.refresh_claimed_until is None


async def test_a_users_tokens_serve_their_runs_alone(api: OrchestratorApi) -> None:
    await _connect(api)
    other = await _other(api)
    refused = await _whoami(other)  # B never rides on A's connection
    assert refused["error_type"] == "permission_error", refused["error"]
    await _connect(other)
    mine, theirs = (await _whoami(api))["data"]["text"], (await _whoami(other))["data"]["text"]
    assert mine != theirs and mine.startswith("you are user-")


async def test_a_state_is_single_use_and_bound_to_its_start(api: OrchestratorApi) -> None:
    location = await _authorize(api)
    assert (await _callback(api, location)).status_code == 303
    again = await _callback(api, location)  # replayed: the state is spent
    assert again.status_code == 404 and "already used" in again.json()["detail"]
    forged = await api.client.get("/api/mcp/oauth/callback?state=made-up&code=x")
    assert forged.status_code == 404
    assert forged.headers["content-type"].startswith("application/problem+json")


async def test_expired_or_refused_authorizations_fail_cleanly(api: OrchestratorApi) -> None:
    location = await _authorize(api)
    await api.db.execute(update(McpOAuthState).values(expires_at=utcnow() - timedelta(seconds=1)))
    await api.db.commit()
    expired = await _callback(api, location)
    assert expired.status_code == 303 and "status=failed" in expired.headers["location"]
    assert "expired" in parse_qs(urlsplit(expired.headers["location"]).query)["error"][0]

    state = parse_qs(urlsplit(await _authorize(api)).query)["state"][0]
    denied = await api.client.get(f"/api/mcp/oauth/callback?state={state}&error=access_denied")
    assert "status=failed" in denied.headers["location"]
    assert (await api.db.scalar(select(func.count()).select_from(McpConnection))) == 0


async def test_bad_requests_are_problems(api: OrchestratorApi) -> None:
    assert (await api.client.post(START)).status_code == 401
    missing = await api.client.post(f"{URL}/nope/oauth/start", headers=api.headers)
    assert missing.status_code == 404
    no_state = await api.client.get("/api/mcp/oauth/callback?code=x")
    assert no_state.status_code == 400


async def test_discovery_reaches_private_hosts_only_when_allowed(world: OAuthWorld) -> None:
    """The server's own host is the operator's; the authorization server it names is a
    remote document's word: on a private address, it must be allowed by name."""
    spec = McpServerSpec(name="notes", url=world.mcp.url, per_user=True)
    with pytest.raises(OAuthUnavailable, match="metadata cannot be read"):
        await discover(Settings(), spec)
    found = await discover(Settings(mcp_oauth_allow_hosts=("127.0.0.1",)), spec)
    assert str(found.metadata.issuer).rstrip("/") == world.issuer
    assert found.scope == "notes" and found.resource == world.mcp.url


async def test_discovery_follows_the_servers_refusal_to_its_metadata() -> None:
    """A server whose metadata is not at the well-known places says where it is when it
    refuses a request without a token (WWW-Authenticate: Bearer resource_metadata=…)."""
    allowed = Settings(mcp_oauth_allow_hosts=("127.0.0.1",))
    with oauth_world(relocated=True) as world:
        spec = McpServerSpec(name="notes", url=world.mcp.url, per_user=True)
        async with httpx.AsyncClient() as http:  # nothing at the well-known places
            base = world.mcp.url.removesuffix("/mcp")
            for path in (
                "/.well-known/oauth-protected-resource/mcp",
                "/.well-known/oauth-protected-resource",
            ):
                assert (await http.get(base + path)).status_code == 404
        found = await discover(allowed, spec)
    assert str(found.metadata.issuer).rstrip("/") == world.issuer
    assert found.scope == "notes" and found.resource == world.mcp.url


def test_a_refusal_names_the_metadata_and_the_scope_to_ask_for() -> None:
    header = (
        'Bearer error="insufficient_scope", scope="notes files:read", '
        'resource_metadata="https://mcp.example.com/meta/resource"'
    )
    assert Challenge.parse(403, header) == Challenge(
        "https://mcp.example.com/meta/resource", "notes files:read"
    )
    assert Challenge.parse(401, None) == Challenge()
