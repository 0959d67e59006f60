"""The fake model as a process of its own: `python -m bench.turn.model` prints its base URL.

Out of the benchmark's process so that neither its clients nor the fake model steal each
other's CPU. Every first call of a run asks for 2 parallel `tasks` calls; the call after
the tool results answers with text. It stops when its stdin closes.
`BENCH_CALL_PAUSE=0.05`: the calls are written as a model writes a long call, each chunk
its own write that far apart (so their cells show `preparing` first); by default they
come in one read.
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

from bench.common import serve_until_stdin_closes
from tests.support.fake_llm import Call, FakeLLM, Text, ToolCalls

CHUNKS = int(os.environ.get("BENCH_ANSWER_CHUNKS", "4"))
PAUSE = float(os.environ.get("BENCH_ANSWER_PAUSE", "0"))
CALL_PAUSE = float(os.environ.get("BENCH_CALL_PAUSE", "0"))
ANSWER = "Both tasks are on your list." if CHUNKS <= 4 else "".join(f"w{i} " for i in range(CHUNKS))


def respond(body: dict[str, Any]) -> Text | ToolCalls:
    if body["messages"][-1]["role"] == "tool":
        return Text(ANSWER, pieces=CHUNKS, pause=PAUSE)
    return ToolCalls(
        Call("tasks", {"action": "create", "title": "Buy milk"}),
        Call("tasks", {"action": "create", "title": "Buy bread"}),
        pause=CALL_PAUSE,
    )


class Forgetful(FakeLLM):
    """Keeps no request bodies (a long benchmark would hold thousands)."""

    def _next(self, body: dict[str, Any]) -> Any:
        self.requests.clear()
        self.handler_seconds.clear()
        self.peers.clear()
        return super()._next(body)


if __name__ == "__main__":
    asyncio.run(serve_until_stdin_closes(Forgetful(respond)))
