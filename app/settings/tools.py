"""Settings of tools: agent types, the built-in web tools, tool output, and MCP servers
(the bundled demo, per-user servers' tokens and OAuth)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from msgspec import Meta

from app.settings.base import NonNegativeFloat, PositiveInt


@dataclass(frozen=True)
class ToolSettings:
    agent_types_file: Annotated[
        str | None,
        Meta(
            description="YAML of agent types and toolsets (`app/tools/agent_types.yaml` if unset)"
        ),
    ] = None
    web_search_url: Annotated[
        str | None, Meta(description="SearXNG-compatible search endpoint for the `web` tool")
    ] = None
    web_fetch_allow_hosts: Annotated[
        tuple[str, ...],
        Meta(description="hosts `web.fetch` may reach although they resolve to private addresses"),
    ] = ()
    tool_output_max_chars: Annotated[
        PositiveInt,
        Meta(description="characters of a tool's streamed output kept in its cell (`data.output`)"),
    ] = 20_000
    tool_result_max_bytes: Annotated[
        PositiveInt,
        Meta(
            description="bytes of JSON a tool's result may take in its cell, its frame and "
            "the model's context; past it the result is cut (`truncated`, `original_size`)"
        ),
    ] = 65_536
    tool_flush_seconds: Annotated[
        NonNegativeFloat,
        Meta(description="least time between writes of a running tool's output and progress"),
    ] = 0.25
    mcp_demo_server: Annotated[
        bool,
        Meta(
            description="start the bundled demo MCP server (a free local port) for agent "
            "types that list a `bundled: true` server"
        ),
    ] = True
    mcp_token_key: Annotated[
        str | None,
        Meta(
            description="Fernet key (`Fernet.generate_key()`) encrypting users' MCP server "
            "tokens, or several, comma-separated: the first encrypts, every one decrypts "
            "(rotation: the new key first, then `litestar connections rekey`, then drop the "
            "old one); unset: per-user MCP servers are off"
        ),
    ] = None
    mcp_oauth_allow_hosts: Annotated[
        tuple[str, ...],
        Meta(
            description="hosts MCP OAuth discovery and token requests may reach although they "
            "resolve to private addresses (every other host must be public)"
        ),
    ] = ()
    mcp_oauth_redirect_url: Annotated[
        str | None,
        Meta(
            description="the public URL of `GET /api/mcp/oauth/callback` given to authorization "
            "servers; unset: derived from the request that starts the flow"
        ),
    ] = None
    mcp_oauth_return_url: Annotated[
        str | None,
        Meta(
            description="where the OAuth callback sends the browser when done (the app's "
            "callback URL, e.g. `toolcells://mcp-oauth`; `?server=…&status=…` appended); "
            "unset: a short page"
        ),
    ] = None
