"""A server's request for the user's input during a call (MCP elicitation: the 2026-07-28
`input_required` result, or an older server's `elicitation/create` request; the SDK's
client hands both to one `elicitation_callback`).

The request becomes the cell's `awaiting_input` (`ctx.ask`, app/orchestrator/loop/input_requests.py)
with what the app needs to ask: the server's message and, in form mode, the JSON Schema of
the answer (in URL mode, the URL to open). The user's `accept` / `decline` / `cancel` goes
back to the server as the elicitation result; no answer in time is a `cancel` to the server
and a `timeout` failure for the call.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import mcp.types as mcp_types
from mcp.client.session import ClientRequestContext

from app.tools.base import ToolContext


def input_request(server: str, tool: str, params: mcp_types.ElicitRequestParams) -> dict[str, Any]:
    """What the cell shows in `data.input_request`."""
    request: dict[str, Any] = {"server": server, "tool": tool, "message": params.message}
    if isinstance(params, mcp_types.ElicitRequestURLParams):
        return {**request, "mode": "url", "url": params.url}
    return {**request, "mode": "form", "requested_schema": params.requested_schema}


@dataclass
class Elicitation:
    """The `elicitation_callback` of one call; `expired` once a request went unanswered."""

    ctx: ToolContext
    server: str
    tool: str
    expired: bool = False
    asked: bool = False  # the server got as far as asking (the call ran)

    async def __call__(
        self, context: ClientRequestContext, params: mcp_types.ElicitRequestParams
    ) -> mcp_types.ElicitResult:
        self.asked = True
        answer = await self.ctx.ask(input_request(self.server, self.tool, params))
        if answer is None:
            self.expired = True
            return mcp_types.ElicitResult(action="cancel")
        return mcp_types.ElicitResult(action=answer["action"], content=answer.get("content"))
