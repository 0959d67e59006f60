"""A fake OpenAI-compatible chat completions server, over real HTTP on a loopback port.

Tests script what the model answers, one response per request, and read back the
requests it got (the history and tool results the model saw). Responses stream as SSE
like OpenAI's: text in chunks, tool calls whose arguments are split across chunks (in
one write, or each chunk its own write with a pause, as a model writes a long call),
several calls in one turn, errors (429 with retry-after, 500), hangs and dropped
connections on demand.

    async with FakeLLM() as llm:
        llm.script(Text("Hello"), ToolCalls(Call("tasks", {"action": "list"})), Text("Done"))
        ... settings.llm_api_base = llm.base_url, llm_model = "openai/fake-model"
"""

from __future__ import annotations

import asyncio
import json
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import uvicorn


@dataclass
class Text:
    text: str
    pieces: int = 3
    hang_after: bool = False  # stream the text, then never finish (cancel tests)
    drop_after: bool = False  # stream the text, then close the connection mid-answer
    usage: dict[str, int] | None = None  # a last chunk with no choices, only usage
    pause: float = 0.0  # > 0: each chunk is its own write, this many seconds apart


@dataclass
class Call:
    name: str
    arguments: dict[str, Any] | str  # a str is sent verbatim (invalid JSON tests)
    id: str | None = None


@dataclass
class ToolCalls:
    calls: list[Call]
    text: str = ""
    pieces: int = 3  # each call's arguments arrive in this many chunks
    usage: dict[str, int] | None = None
    pause: float = 0.0  # > 0: each chunk is its own write, this many seconds apart
    hang_after: bool = False  # stream the calls, then never finish (cancel tests)
    drop_after: bool = False  # stream the calls, then close the connection mid-answer

    def __init__(
        self,
        *calls: Call,
        text: str = "",
        pieces: int = 3,
        usage: dict[str, int] | None = None,
        pause: float = 0.0,
        hang_after: bool = False,
        drop_after: bool = False,
    ) -> None:
        self.calls, self.text, self.pieces, self.usage = list(calls), text, pieces, usage
        self.pause, self.hang_after, self.drop_after = pause, hang_after, drop_after


@dataclass
class Error:
    status: int
    message: str = "fake error"
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class Raw:
    """A body sent verbatim: a 200 event stream by default (malformed chunks, other
    providers' streams), or any status and type (other providers' error bodies)."""

    body: bytes
    status: int = 200
    content_type: str = "text/event-stream"
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class Hang:
    """Accept the request and never answer (timeout tests)."""


Response = Text | ToolCalls | Error | Hang | Raw
Responder = Callable[[dict[str, Any]], Response]


def _split(text: str, pieces: int) -> list[str]:
    if not text:
        return []
    size = max(1, -(-len(text) // max(1, pieces)))
    return [text[i : i + size] for i in range(0, len(text), size)]


class FakeLLM:
    def __init__(self, responder: Responder | None = None, host: str = "127.0.0.1") -> None:
        self.host = host  # another address: a model server other hosts reach (tests/hosts)
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []  # each request's headers, lower-cased names
        self.handler_seconds: list[float] = []  # the fake model's own time per request
        self.peers: list[tuple[str, int]] = []  # each request's client address (keep-alive)
        self.paths: list[str] = []  # each request's path and query
        self._queue: list[Response] = []
        self._responder = responder
        self._arrived = asyncio.Condition()
        self._stop_hangs = asyncio.Event()
        self._server: uvicorn.Server | None = None
        self._task: asyncio.Task[None] | None = None
        self.base_url = ""
        self._call_counter = 0

    # -- scripting -------------------------------------------------------------------
    def script(self, *responses: Response) -> None:
        self._queue.extend(responses)

    def reset(self) -> None:
        self.requests.clear()
        self.headers.clear()
        self.peers.clear()
        self.paths.clear()
        self._queue.clear()
        self._responder = None

    def respond_with(self, responder: Responder | None) -> None:
        self._responder = responder

    async def wait_for_requests(self, count: int, timeout: float = 10) -> None:  # noqa: ASYNC109
        async with asyncio.timeout(timeout), self._arrived:
            await self._arrived.wait_for(lambda: len(self.requests) >= count)

    def _next(self, body: dict[str, Any]) -> Response:
        if self._queue:
            return self._queue.pop(0)
        if self._responder is not None:
            return self._responder(body)
        return Text("(fake model: nothing scripted)")

    # -- serving ---------------------------------------------------------------------
    async def __aenter__(self) -> FakeLLM:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # inherited on accept
        sock.bind((self.host, 0))
        sock.listen(128)  # connections queue in the kernel until uvicorn accepts them
        port = sock.getsockname()[1]
        config = uvicorn.Config(self, log_level="warning", lifespan="off", access_log=False)
        self._server = uvicorn.Server(config)
        self._task = asyncio.create_task(self._server.serve(sockets=[sock]))
        self.base_url = f"http://{self.host}:{port}/v1"
        return self

    async def __aexit__(self, *exc: object) -> None:
        self._stop_hangs.set()
        assert self._server is not None and self._task is not None
        self._server.should_exit = True
        await self._task

    async def __call__(self, scope: dict, receive: Callable, send: Callable) -> None:
        if scope["type"] != "http":
            return
        started = time.perf_counter()
        headers = {k.decode().lower(): v.decode() for k, v in scope.get("headers", [])}
        self.peers.append(tuple(scope.get("client") or ("", 0)))
        query = scope.get("query_string", b"").decode()
        self.paths.append(scope.get("path", "") + (f"?{query}" if query else ""))
        try:
            await self._serve(receive, send, headers)
        finally:
            self.handler_seconds.append(time.perf_counter() - started)

    async def _serve(self, receive: Callable, send: Callable, headers: dict[str, str]) -> None:
        raw = b""
        while True:
            message = await receive()
            raw += message.get("body", b"")
            if not message.get("more_body"):
                break
        body = json.loads(raw or b"{}")
        response = self._next(body)
        async with self._arrived:
            self.headers.append(headers)
            self.requests.append(body)
            self._arrived.notify_all()
        if isinstance(response, Hang):
            await self._stop_hangs.wait()
            return
        if isinstance(response, Error):
            payload = {"error": {"message": response.message, "type": "fake", "code": None}}
            sent = [(b"content-type", b"application/json")]
            sent += [(k.encode(), v.encode()) for k, v in response.headers.items()]
            await send({"type": "http.response.start", "status": response.status, "headers": sent})
            await send({"type": "http.response.body", "body": json.dumps(payload).encode()})
            return
        if isinstance(response, Raw):
            sent = [(b"content-type", response.content_type.encode())]
            sent += [(k.encode(), v.encode()) for k, v in response.headers.items()]
            await send({"type": "http.response.start", "status": response.status, "headers": sent})
            await send({"type": "http.response.body", "body": response.body})
            return
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [(b"content-type", b"text/event-stream")],
            }
        )
        chunks = self._chunks(response, body.get("model", "fake-model"))
        if response.pause > 0:  # tokens as a model emits them
            for chunk in chunks[:-1]:
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
                await asyncio.sleep(response.pause)
            chunks = chunks[-1:]
        # One write: many small writes meet delayed ACKs and cost ~40 ms a response.
        stream = b"".join(chunks)
        if response.hang_after:
            await send({"type": "http.response.body", "body": stream, "more_body": True})
            await self._stop_hangs.wait()
            return
        if response.drop_after:
            # returning with the body unfinished makes uvicorn close the connection
            await send({"type": "http.response.body", "body": stream, "more_body": True})
            return
        await send({"type": "http.response.body", "body": stream + b"data: [DONE]\n\n"})

    def _chunks(self, response: Text | ToolCalls, model: str) -> list[bytes]:
        base = {
            "id": "chatcmpl-fake",
            "object": "chat.completion.chunk",
            "created": int(time.time()),
            "model": model,
        }

        def sse(delta: dict[str, Any], finish: str | None = None) -> bytes:
            choice = {"index": 0, "delta": delta, "finish_reason": finish}
            return b"data: " + json.dumps({**base, "choices": [choice]}).encode() + b"\n\n"

        def usage() -> list[bytes]:
            if response.usage is None:
                return []
            chunk = {**base, "choices": [], "usage": response.usage}
            return [b"data: " + json.dumps(chunk).encode() + b"\n\n"]

        out = [sse({"role": "assistant", "content": ""})]
        out += [sse({"content": piece}) for piece in _split(response.text, response.pieces)]
        if isinstance(response, Text):
            if not (response.hang_after or response.drop_after):
                out.append(sse({}, "stop"))
                out += usage()
            return out
        for index, call in enumerate(response.calls):
            self._call_counter += 1
            call_id = call.id or f"call_{self._call_counter}"
            args = call.arguments if isinstance(call.arguments, str) else json.dumps(call.arguments)
            head = {"index": index, "id": call_id, "type": "function"}
            out.append(
                sse({"tool_calls": [{**head, "function": {"name": call.name, "arguments": ""}}]})
            )
            for piece in _split(args, response.pieces):
                out.append(
                    sse({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
                )
        if response.hang_after or response.drop_after:
            return out
        out.append(sse({}, "tool_calls"))
        return out + usage()
