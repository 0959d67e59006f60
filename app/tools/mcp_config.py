"""The `mcp_servers:` section of the agent-types file: one remote MCP server each.

```yaml
mcp_servers:
  github:
    url: https://api.githubcopilot.com/mcp/
    headers: {Authorization: GITHUB_MCP_AUTHORIZATION}   # header -> env variable
    tools: [search_issues, get_issue]                     # allow-list (omit: all)
    requires_confirmation: [create_issue]                 # or true / false
    timeout_seconds: 60
  notes:
    url: https://notes.example/mcp
    per_user: true          # each user connects it: a token, or OAuth where it offers it
    oauth_client_id: toolcells          # optional: else dynamic client registration
    oauth_client_secret: NOTES_OAUTH_SECRET   # optional: the secret's env variable
```

The URL and headers come from the operator (this file and the environment), never from a
model or a user, so they are used as given (no SSRF vetting, like `LLM_API_BASE`).
"""

from __future__ import annotations

import os
import re
from typing import Annotated
from urllib.parse import urlsplit

import msgspec

SERVER_NAME = re.compile(r"^[a-zA-Z0-9-]{1,24}$")  # no `_`: `__` separates server and tool
ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
HEADER_NAME = re.compile(r"^[A-Za-z0-9-]{1,64}$")


class McpServerSpec(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """One declared server. `bundled: true` is the demo server the app starts itself on a
    free local port (its `url` is set at startup)."""

    name: str = ""
    url: str = ""
    description: str = ""
    # header name -> the environment variable holding its value (never the value itself)
    headers: dict[str, str] = {}
    tools: list[str] | None = None  # the allow-list; None: every tool the server lists
    requires_confirmation: bool | list[str] = False
    timeout_seconds: Annotated[float, msgspec.Meta(gt=0, le=3600)] = 60
    # how long a tools/list stays fresh (a `list_changed` notification refreshes sooner)
    refresh_seconds: Annotated[float, msgspec.Meta(gt=0, le=86400)] = 300
    # bytes of one answer of the server (a JSON answer, or one event of a streamed one),
    # refused past it unread; the SDK's own bound for an event. Raise it for a server
    # whose tools return large images (base64 takes 4/3 of the image's bytes).
    max_message_bytes: Annotated[int, msgspec.Meta(gt=0, le=64 * 1024 * 1024)] = 1024 * 1024
    is_user_facing: bool = True
    bundled: bool = False
    # Each user connects it with their own token (PUT /api/mcp/servers/{name}/connection),
    # sent as `Authorization: Bearer …` on that user's calls only.
    per_user: bool = False
    # OAuth 2.1 (per-user servers that advertise it): a client id registered with the
    # server's authorization server, and the environment variable holding its secret (if it
    # has one). Without a client id, the app registers itself where the server offers
    # dynamic client registration.
    oauth_client_id: str | None = None
    oauth_client_secret: str | None = None  # an environment variable's name
    oauth_scopes: list[str] | None = None  # None: what the server's metadata lists

    def allows(self, tool: str) -> bool:
        return self.tools is None or tool in self.tools

    def needs_confirmation(self, tool: str) -> bool:
        if isinstance(self.requires_confirmation, bool):
            return self.requires_confirmation
        return tool in self.requires_confirmation

    def header_values(self) -> dict[str, str] | str:
        """The headers with their values from the environment, or the first variable
        that is unset (the server then stays out of every toolset)."""
        values = {}
        for header, variable in self.headers.items():
            value = os.environ.get(variable)
            if not value:
                return variable
            values[header] = value
        return values


def declaration_problem(spec: McpServerSpec) -> str | None:
    """Why the declaration cannot be used, or None."""
    where = f"mcp server {spec.name!r}"
    if not SERVER_NAME.match(spec.name):
        return f"{where}: the name must match {SERVER_NAME.pattern}"
    if not spec.bundled:
        parts = urlsplit(spec.url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            return f"{where}: url must be an http(s) URL of its Streamable HTTP endpoint"
    for header, variable in spec.headers.items():
        if not HEADER_NAME.match(header):
            return f"{where}: {header!r} is not a header name"
        if not ENV_NAME.match(variable):
            return f"{where}: header {header} must name an environment variable, not a value"
    if spec.oauth_client_secret is not None and not ENV_NAME.match(spec.oauth_client_secret):
        return f"{where}: oauth_client_secret must name an environment variable, not a value"
    return None
