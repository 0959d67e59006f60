"""The fake model of `bench.looplag`, a process of its own (`python -m bench.looplag.model`
prints its base URL). A message starting with "search" gets one `memory` search over
every seeded memory (`seed.QUERY`, the largest page); "flood" one call of the hostile
MCP tool (5 MB of structured content, `hostile.py`); any other the turn benchmark's two
parallel `tasks` calls. The call after the tool results answers with text."""

from __future__ import annotations

import asyncio
from typing import Any

from bench.common import serve_until_stdin_closes
from bench.looplag.hostile import FLOOD_ROWS, FLOOD_TOOL
from bench.looplag.seed import QUERY
from bench.turn.model import Forgetful
from bench.turn.model import respond as turn_respond
from tests.support.fake_llm import Call, Text, ToolCalls


def respond(body: dict[str, Any]) -> Text | ToolCalls:
    messages = body["messages"]
    if messages[-1]["role"] == "tool":
        return Text("Here is what I found.")
    asked = next(m for m in reversed(messages) if m["role"] == "user")
    if str(asked.get("content", "")).startswith("flood"):
        return ToolCalls(Call(FLOOD_TOOL, {"rows": FLOOD_ROWS}))
    if str(asked.get("content", "")).startswith("search"):
        return ToolCalls(Call("memory", {"action": "search", "query": QUERY, "limit": 50}))
    return turn_respond(body)


if __name__ == "__main__":
    asyncio.run(serve_until_stdin_closes(Forgetful(respond)))
