"""Simulated phones. Ours: each opens a websocket, then per turn creates a thread,
subscribes, posts a message and reads `message`/`delta`/`run` frames until the run ends.
LangGraph's: per turn creates a thread and streams a run (its SSE carries the tokens).

Every frame is timestamped when it is read off the socket, by a reader task of its own,
so a user busy posting does not delay its clock. aiohttp for HTTP and the websocket: it
costs the load generator less CPU per frame than httpx + websockets.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass

import aiohttp
import msgspec

from bench.langgraph.client import INPUT, STREAM_MODE
from bench.langgraph.server import GRAPH_ID
from bench.realistic.pacing import TokenClock
from bench.realistic.samples import Samples
from bench.realistic.setup import Account

_decode = msgspec.json.Decoder().decode
_encode = msgspec.json.encode
ENDED = {"completed", "failed", "cancelled"}


@dataclass(frozen=True)
class Window:
    """When a user starts its first turn, when every user has started (turns/s counts the
    turns ended from then on), when users stop starting turns (monotonic seconds), and the
    longest a turn may take."""

    start: float
    steady: float
    deadline: float
    timeout: float

    def counts(self, ended: float) -> bool:
        return self.steady <= ended <= self.deadline


class SocketClosed(Exception):
    pass


class Turn:
    """The turn in flight on a socket, filled in by the socket's reader."""

    def __init__(self, thread_id: str) -> None:
        self.thread_id = thread_id
        self.subscribed = asyncio.Event()
        self.clock: TokenClock | None = None
        self.ended: asyncio.Future[str] = asyncio.get_running_loop().create_future()

    def end(self, status: str | BaseException) -> None:
        if self.ended.done():
            return
        if isinstance(status, BaseException):
            self.ended.set_exception(status)
        else:
            self.ended.set_result(status)


class Phone:
    """One user of our server: an HTTP session and a websocket of its own."""

    def __init__(self, base: str, account: Account, samples: Samples) -> None:
        self.base, self.account, self.samples = base, account, samples
        self.turn: Turn | None = None

    async def run(self, window: Window) -> None:
        await asyncio.sleep(max(0.0, window.start - time.monotonic()))
        headers = {"Authorization": f"Bearer {self.account.token}"}
        async with aiohttp.ClientSession(self.base, headers=headers) as http:
            while time.monotonic() < window.deadline:
                try:
                    async with http.ws_connect("/api/ws", max_msg_size=0) as ws:
                        reader = asyncio.create_task(self._read(ws))
                        try:
                            while time.monotonic() < window.deadline:
                                await self._turn(http, ws, window)
                        finally:
                            reader.cancel()
                except SocketClosed:
                    self.samples.closed += 1  # reconnect, as the app does
                except (aiohttp.ClientError, OSError) as error:
                    self.samples.fail(f"socket: {type(error).__name__} {error}"[:100])
                    await asyncio.sleep(1)

    async def _turn(
        self, http: aiohttp.ClientSession, ws: aiohttp.ClientWebSocketResponse, window: Window
    ) -> None:
        turn = run_id = None
        if ws.closed:  # closed by the server between turns
            raise SocketClosed
        try:
            async with asyncio.timeout(window.timeout):
                async with http.post("/api/threads", json={"agent_id": self.account.agent_id}) as r:
                    r.raise_for_status()
                    thread_id = (await r.json())["id"]
                turn = self.turn = Turn(thread_id)
                await ws.send_bytes(_encode({"type": "subscribe", "thread_id": thread_id}))
                await turn.subscribed.wait()
                turn.clock = TokenClock(time.monotonic())
                path = f"/api/threads/{thread_id}/messages"
                async with http.post(path, json={"content": "remind me to buy milk"}) as r:
                    r.raise_for_status()
                    run_id = (await r.json())["run"]["id"]
                status = await turn.ended
        except TimeoutError:
            self.samples.timeouts += 1
            if turn is not None and run_id is not None:  # a phone that gives up cancels
                await self._cancel(http, turn.thread_id, run_id)
            status = None
        except aiohttp.ClientResponseError as error:
            self.samples.fail(f"HTTP {error.status} {error.request_info.url.path}")
            status = None
        finally:
            self.turn = None
            if turn is not None:
                self.samples.add_turn(turn.clock)
        if turn is not None and not ws.closed:  # a socket holds WS_MAX_SUBSCRIPTIONS at most
            await ws.send_bytes(_encode({"type": "unsubscribe", "thread_id": turn.thread_id}))
        if status is None:
            return
        if status != "completed" or turn is None or turn.clock is None or not turn.clock.seen:
            self.samples.fail(f"run {status}" if status != "completed" else "no answer tokens")
            return
        self.samples.completed += 1
        if window.counts(time.monotonic()):
            self.samples.in_window += 1

    async def _cancel(self, http: aiohttp.ClientSession, thread_id: str, run_id: str) -> None:
        try:
            async with http.post(f"/api/threads/{thread_id}/runs/{run_id}/cancel") as r:
                await r.read()
        except (aiohttp.ClientError, OSError):
            pass

    async def _read(self, ws: aiohttp.ClientWebSocketResponse) -> None:
        try:
            async for message in ws:
                at = time.monotonic()
                if message.type not in (aiohttp.WSMsgType.TEXT, aiohttp.WSMsgType.BINARY):
                    continue
                frame = _decode(message.data)
                turn = self.turn
                if turn is None:
                    continue
                kind = frame.get("type")
                if kind == "error":  # nothing a phone sends here should be refused
                    turn.end(f"error: {frame}")
                    continue
                if frame.get("thread_id") != turn.thread_id:
                    continue
                if kind == "subscribed":
                    turn.subscribed.set()
                elif kind == "delta" and turn.clock is not None:
                    turn.clock.received(frame["content"], at)
                elif kind == "message" and turn.clock is not None:
                    message_read = frame["message"]
                    if message_read.get("role") == "assistant" and message_read.get("content"):
                        turn.clock.received(message_read["content"], at)
                elif kind == "run" and frame["run"]["status"] in ENDED:
                    run = frame["run"]
                    error = run.get("error")
                    turn.end(run["status"] if not error else f"{run['status']} ({error})"[:120])
        finally:
            if self.turn is not None:
                self.turn.end(SocketClosed())


async def langgraph_user(base: str, window: Window, samples: Samples) -> None:
    """One user of `langgraph dev`: thread, then a run streamed to its end, per turn."""
    await asyncio.sleep(max(0.0, window.start - time.monotonic()))
    body = {"assistant_id": GRAPH_ID, "input": INPUT, "stream_mode": STREAM_MODE}
    async with aiohttp.ClientSession(base) as http:
        while time.monotonic() < window.deadline:
            clock, failed = None, False
            try:
                async with asyncio.timeout(window.timeout):
                    async with http.post("/threads", json={}) as r:
                        r.raise_for_status()
                        thread_id = (await r.json())["thread_id"]
                    clock = TokenClock(time.monotonic())
                    path = f"/threads/{thread_id}/runs/stream"
                    async with http.post(path, json=body) as r:
                        r.raise_for_status()
                        async for line in r.content:
                            at = time.monotonic()
                            if line.startswith(b"event: error"):
                                failed = True
                            elif line.startswith(b"data:"):  # tokens found in the raw JSON
                                clock.received(line.decode(), at)
            except TimeoutError:  # the stream is closed: LangGraph cancels the run
                samples.timeouts += 1
                samples.add_turn(clock)
                continue
            except (aiohttp.ClientError, OSError):
                failed = True
                await asyncio.sleep(0.1)
            samples.add_turn(clock)
            if failed or clock is None or not clock.seen:
                samples.fail("error event" if failed else "no answer tokens")
                continue
            samples.completed += 1
            if window.counts(time.monotonic()):
                samples.in_window += 1
