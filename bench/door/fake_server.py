"""The fake OpenAI server of the door benchmark, in a process of its own (so its CPU is
not counted as the door's). Prints its base URL, then serves until stdin closes.

The answer is chosen by the requested model: `text-<n>` streams a text in n chunks,
`tools-<n>` asks for n parallel `tasks` calls whose arguments arrive in 4 chunks each.
"""

from __future__ import annotations

import asyncio
from typing import Any

from bench.common import serve_until_stdin_closes
from tests.support.fake_llm import Call, FakeLLM, Text, ToolCalls


def respond(body: dict[str, Any]) -> Text | ToolCalls:
    kind, _, count = str(body.get("model", "")).rpartition("-")
    n = int(count)
    if kind == "tools":
        calls = [Call("tasks", {"action": "create", "title": f"Task {i}"}) for i in range(n)]
        return ToolCalls(*calls, pieces=4)
    # distinct chunks (litellm fails a stream repeating one chunk), ~6 characters each
    return Text("".join(f"w{i:04d} " for i in range(n)), pieces=n)


if __name__ == "__main__":
    asyncio.run(serve_until_stdin_closes(FakeLLM(respond)))
