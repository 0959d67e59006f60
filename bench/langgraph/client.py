"""The turn benchmark's scripted turn against LangGraph's HTTP API (`langgraph dev`), as a
chat app would drive it: create a thread, start a run on it and read the run's stream to
its end, showing the reply's tokens and the tool calls as they come.

Per turn: `POST /threads`, then `POST /threads/{id}/runs/stream` (the graph's assistant,
the user's message as input, `stream_mode` `["messages-tuple", "updates"]`: the model's
tokens, and each node's update - the tool calls, the tool results, the answer), each SSE
event decoded. Turn latency: run POST sent -> stream ended (the run is complete then);
script: thread POST -> stream ended. A turn fails if its stream carries an `error` event.
"""

from __future__ import annotations

import time
from typing import Any

import httpx
import msgspec

from bench.langgraph.server import GRAPH_ID
from bench.turn.client import TurnTimes

_decode = msgspec.json.Decoder().decode
STREAM_MODE = ["messages-tuple", "updates"]
INPUT = {"messages": [{"role": "user", "content": "go"}]}
Event = tuple[str, Any]


class LangGraphClient:
    def __init__(self, base: str, assistant_id: str = GRAPH_ID) -> None:
        self.base, self.assistant_id = base, assistant_id

    async def run(self, turns: int, times: TurnTimes) -> None:
        async with httpx.AsyncClient(base_url=self.base, timeout=30) as http:
            for _ in range(turns):
                await self._turn(http, times)

    async def _turn(self, http: httpx.AsyncClient, times: TurnTimes) -> None:
        started = time.perf_counter()
        thread_id = await create_thread(http)
        sent = time.perf_counter()
        events = await stream_run(http, thread_id, self.assistant_id)
        ended = time.perf_counter()
        if any(name == "error" for name, _ in events):
            times.failed += 1
            return
        times.turn.append(ended - sent)
        times.script.append(ended - started)


async def create_thread(http: httpx.AsyncClient) -> str:
    created = await http.post("/threads", json={})
    return created.raise_for_status().json()["thread_id"]


async def stream_run(http: httpx.AsyncClient, thread_id: str, assistant_id: str) -> list[Event]:
    """Start a run on the thread and read its SSE stream to the end: (event, data)s."""
    body = {"assistant_id": assistant_id, "input": INPUT, "stream_mode": STREAM_MODE}
    events: list[Event] = []
    name, data = "", []
    async with http.stream("POST", f"/threads/{thread_id}/runs/stream", json=body) as response:
        response.raise_for_status()
        async for line in response.aiter_lines():
            if line.startswith("event:"):
                name = line[6:].strip()
            elif line.startswith("data:"):
                data.append(line[5:].strip())
            elif not line and name:
                events.append((name, _decode("\n".join(data)) if data else None))
                name, data = "", []
    return events


async def verify(base: str, turns: int = 3) -> None:
    """A few turns, checked: the model was called twice per run (2 parallel `tasks`
    calls, then the answer), the stream showed it live, the thread's state holds it."""
    async with httpx.AsyncClient(base_url=base, timeout=30) as http:
        for _ in range(turns):
            thread_id = await create_thread(http)
            events = await stream_run(http, thread_id, GRAPH_ID)
            _check_stream(events)
            state = (await http.get(f"/threads/{thread_id}/state")).raise_for_status().json()
            _check_messages(state["values"]["messages"])


def _check_stream(events: list[Event]) -> None:
    names = [name for name, _ in events]
    updates = [next(iter(data)) for name, data in events if name == "updates"]
    if "error" in names or "messages" not in names or updates != ["agent", "tools", "agent"]:
        raise RuntimeError(f"unexpected LangGraph stream: {names}, updates {updates}")


def _check_messages(messages: list[dict[str, Any]]) -> None:
    kinds = [m["type"] for m in messages]
    calls = [c["name"] for c in messages[1].get("tool_calls", [])] if len(kinds) > 1 else []
    answer = messages[-1]
    if kinds != ["human", "ai", "tool", "tool", "ai"] or calls != ["tasks", "tasks"]:
        raise RuntimeError(f"unexpected LangGraph thread: {kinds}, calls {calls}")
    if answer["tool_calls"] or not answer["content"]:
        raise RuntimeError(f"no answer in the LangGraph thread: {answer}")
    if not all('"created"' in m["content"] for m in messages[2:4]):
        raise RuntimeError(f"tool results: {messages[2:4]}")
