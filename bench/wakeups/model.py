"""The fake model of the wake-up benchmark, as a process of its own (prints its base URL).

A user message `hang`: the model streams nothing more (the run waits on it until it is
cancelled). `forget`: it asks for `memory` `forget` (a call the user must approve), and
answers once the tool's result is in.
"""

from __future__ import annotations

import asyncio
from typing import Any

from bench.common import serve_until_stdin_closes
from tests.support.fake_llm import Call, FakeLLM, Hang, Text, ToolCalls


def respond(body: dict[str, Any]) -> Text | ToolCalls | Hang:
    last = body["messages"][-1]
    if last["role"] == "tool":
        return Text("Done.")
    if last.get("content") == "hang":
        return Hang()
    return ToolCalls(Call("memory", {"action": "forget", "key": "coffee"}))


if __name__ == "__main__":
    asyncio.run(serve_until_stdin_closes(FakeLLM(respond)))
