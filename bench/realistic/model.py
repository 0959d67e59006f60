"""The fake model with a real model's pacing, a process of its own: `python -m
bench.realistic.model` prints its base URL and serves until its stdin closes.

OpenAI's chat completions SSE over HTTP/1.1 keep-alive (chunked), on bare asyncio
protocols rather than an ASGI server: at 1,000 users it sends ~40,000 chunks a second,
and each must leave when its time comes, not when a framework gets to it. Per turn:
- the first call (no tool result yet): after the TTFT, one `tasks` create call whose
  arguments stream in pieces, one per token interval;
- the call after the tool result: after the TTFT, the answer, one token per chunk
  (`bench.realistic.pacing.token`: each carries its send time, the first also the time
  the user waited on the model so far).
The model's time in the first call travels to the second in a table keyed by the tool
call's id, which the second request carries back in its history.
"""

from __future__ import annotations

import asyncio
import functools
import itertools
import json
import socket
import sys
import time
from collections.abc import Callable
from typing import Any

from bench.common import freeze_heap
from bench.realistic.pacing import Pacing, token

HEADERS = (
    b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
    b"cache-control: no-cache\r\ntransfer-encoding: chunked\r\n\r\n"
)
ARGUMENTS = json.dumps({"action": "create", "title": "Buy milk and bread for the weekend"})
Step = Callable[[], bytes]


def sse(delta: dict[str, Any], finish: str | None = None) -> bytes:
    choice = {"index": 0, "delta": delta, "finish_reason": finish}
    chunk = {"id": "chatcmpl-bench", "object": "chat.completion.chunk", "created": 0}
    chunk |= {"model": "fake-model", "choices": [choice]}
    data = b"data: " + json.dumps(chunk).encode() + b"\n\n"
    return b"%x\r\n%s\r\n" % (len(data), data)


END = b"%x\r\ndata: [DONE]\n\n\r\n0\r\n\r\n" % len(b"data: [DONE]\n\n")


def split(text: str, pieces: int) -> list[str]:
    size = max(1, -(-len(text) // max(1, pieces)))
    return [text[i : i + size] for i in range(0, len(text), size)]


class Model:
    """The turn's script; `model_wait` holds each open tool call's model time."""

    def __init__(self, pacing: Pacing) -> None:
        self.pacing = pacing
        self.model_wait: dict[str, float] = {}
        self.ids = itertools.count()

    def steps(self, body: dict[str, Any], arrived: float) -> list[Step]:
        """The response's chunks in order, each built when sent (its timestamp is then)."""
        messages = body.get("messages") or [{}]
        if messages[-1].get("role") == "tool":
            waited = self.model_wait.pop(messages[-1].get("tool_call_id", ""), 0.0)
            return self._answer(arrived, waited)
        return self._tool_call(arrived)

    def _tool_call(self, arrived: float) -> list[Step]:
        call_id = f"call_{next(self.ids)}"
        head = {"index": 0, "id": call_id, "type": "function"}
        first = sse(
            {
                "role": "assistant",
                "tool_calls": [{**head, "function": {"name": "tasks", "arguments": ""}}],
            }
        )
        steps: list[Step] = [lambda: first]
        for piece in split(ARGUMENTS, self.pacing.argument_pieces):
            chunk = sse({"tool_calls": [{"index": 0, "function": {"arguments": piece}}]})
            steps.append(functools.partial(bytes, chunk))

        def finish() -> bytes:
            self.model_wait[call_id] = time.monotonic() - arrived
            return sse({}, "tool_calls") + END

        return [*steps, finish]

    def _answer(self, arrived: float, waited: float) -> list[Step]:
        def first() -> bytes:
            now = time.monotonic()
            return sse({"role": "assistant", "content": token(0, now, waited + now - arrived)})

        def nth(index: int) -> bytes:
            return sse({"content": token(index, time.monotonic())})

        steps: list[Step] = [first]
        steps += [functools.partial(nth, i) for i in range(1, self.pacing.answer_tokens)]
        steps.append(lambda: sse({}, "stop") + END)
        return steps


class Connection(asyncio.Protocol):
    """One keep-alive connection: requests in turn, each answered by its paced stream."""

    def __init__(self, model: Model) -> None:
        self.model = model
        self.buffer = b""
        self.timer: asyncio.TimerHandle | None = None
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        sock = transport.get_extra_info("socket")
        if sock is not None:  # each token its own segment, at once
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def connection_lost(self, exc: Exception | None) -> None:
        if self.timer is not None:
            self.timer.cancel()

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        end = self.buffer.find(b"\r\n\r\n")
        if end < 0:
            return
        length = 0
        for line in self.buffer[:end].split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value)
        if len(self.buffer) < end + 4 + length:
            return
        body = json.loads(self.buffer[end + 4 : end + 4 + length] or b"{}")
        self.buffer = self.buffer[end + 4 + length :]
        arrived = time.monotonic()
        assert self.transport is not None
        self.transport.write(HEADERS)
        self._schedule(self.model.steps(body, arrived), self.model.pacing.ttft)

    def _schedule(self, steps: list[Step], delay: float) -> None:
        loop = asyncio.get_running_loop()
        self.timer = loop.call_later(delay, self._send, steps, 0)

    def _send(self, steps: list[Step], index: int) -> None:
        assert self.transport is not None
        if self.transport.is_closing():
            return
        self.transport.write(steps[index]())
        if index + 1 < len(steps):
            interval = 1 / self.model.pacing.tokens_per_second
            self.timer = asyncio.get_running_loop().call_later(
                interval, self._send, steps, index + 1
            )
        else:
            self.timer = None
            if self.buffer:  # a pipelined request (clients here do not pipeline)
                self.data_received(b"")


async def serve(pacing: Pacing) -> None:
    loop = asyncio.get_running_loop()
    model = Model(pacing)
    server = await loop.create_server(
        lambda: Connection(model), "127.0.0.1", 0, backlog=4096, reuse_address=True
    )
    port = server.sockets[0].getsockname()[1]
    freeze_heap()
    print(f"http://127.0.0.1:{port}/v1", flush=True)
    await loop.run_in_executor(None, sys.stdin.read)
    server.close()


if __name__ == "__main__":
    asyncio.run(serve(Pacing.from_env()))
