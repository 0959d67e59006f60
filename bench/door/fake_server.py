"""The fake OpenAI server of the door benchmark, in a process of its own (so its CPU is
not counted as the door's). Prints its base URL, then serves until stdin closes.

The answer is chosen by the requested model: `text-<n>` streams a text in n chunks,
`tools-<n>` asks for n parallel `tasks` calls whose arguments arrive in 4 chunks each.
"""

from __future__ import annotations

import asyncio
import sys
from typing import Any

from tests.support.fake_llm import Call, FakeLLM, Text, ToolCalls


def respond(body: dict[str, Any]) -> Text | ToolCalls:
    kind, _, count = str(body.get("model", "")).rpartition("-")
    n = int(count)
    if kind == "tools":
        calls = [Call("tasks", {"action": "create", "title": f"Task {i}"}) for i in range(n)]
        return ToolCalls(*calls, pieces=4)
    # distinct chunks (litellm fails a stream repeating one chunk), ~6 characters each
    return Text("".join(f"w{i:04d} " for i in range(n)), pieces=n)


async def serve() -> None:
    async with FakeLLM(respond) as llm:
        print(llm.base_url, flush=True)
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)


if __name__ == "__main__":
    asyncio.run(serve())
