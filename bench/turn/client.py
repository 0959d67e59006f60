"""One benchmark client: an HTTP client and a websocket of its own on one server process,
repeating the scripted turn (create a thread, subscribe, send a message, wait for the
run's end)."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import Any

import httpx
import msgspec
from websockets.asyncio.client import ClientConnection, connect

_decode = msgspec.json.Decoder().decode


@dataclass
class TurnTimes:
    turn: list[float] = field(default_factory=list)  # message POST -> run completed frame
    script: list[float] = field(default_factory=list)  # thread POST -> run completed frame
    failed: int = 0


class TurnClient:
    def __init__(self, base: str, token: str, agent_id: str, content: str = "go") -> None:
        self.base, self.token, self.agent_id = base, token, agent_id
        self.content = content  # the message each turn sends
        self._waiting: dict[str, asyncio.Future[Any]] = {}
        self._ended: dict[str, str] = {}  # runs that ended before anyone waited for them

    async def run(self, turns: int, times: TurnTimes, stop: asyncio.Event | None = None) -> None:
        headers = {"Authorization": f"Bearer {self.token}"}
        ws_url = self.base.replace("http://", "ws://") + "/api/ws"
        async with (
            httpx.AsyncClient(base_url=self.base, headers=headers, timeout=30) as http,
            connect(ws_url, additional_headers=headers, max_queue=None) as ws,
        ):
            reader = asyncio.create_task(self._read(ws))
            try:
                for _ in range(turns):
                    if stop is not None and stop.is_set():
                        break
                    await self._turn(http, ws, times)
            finally:
                reader.cancel()

    async def _turn(self, http: httpx.AsyncClient, ws: ClientConnection, times: TurnTimes) -> None:
        started = time.perf_counter()
        created = await http.post("/api/threads", json={"agent_id": self.agent_id})
        thread_id = created.raise_for_status().json()["id"]
        subscribed = self._expect(f"s:{thread_id}")
        await ws.send(msgspec.json.encode({"type": "subscribe", "thread_id": thread_id}))
        await asyncio.wait_for(subscribed, 30)
        sent = time.perf_counter()
        posted = await http.post(
            f"/api/threads/{thread_id}/messages", json={"content": self.content}
        )
        run_id = posted.raise_for_status().json()["run"]["id"]
        status = self._ended.pop(run_id, None) or await asyncio.wait_for(
            self._expect(f"r:{run_id}"), 30
        )
        ended = time.perf_counter()
        # leave the thread, as the app does (a socket holds WS_MAX_SUBSCRIPTIONS at most)
        await ws.send(msgspec.json.encode({"type": "unsubscribe", "thread_id": thread_id}))
        if status != "completed":
            times.failed += 1
            return
        times.turn.append(ended - sent)
        times.script.append(ended - started)

    def _expect(self, key: str) -> asyncio.Future[Any]:
        future = asyncio.get_running_loop().create_future()
        self._waiting[key] = future
        return future

    def _resolve(self, key: str, value: Any) -> bool:
        future = self._waiting.pop(key, None)
        if future is None or future.done():
            return False
        future.set_result(value)
        return True

    async def _read(self, ws: ClientConnection) -> None:
        async for raw in ws:
            frame = _decode(raw)
            kind = frame.get("type")
            if kind == "subscribed":
                self._resolve(f"s:{frame['thread_id']}", True)
            elif kind == "error":  # nothing the benchmark sends should be refused
                for future in self._waiting.values():
                    if not future.done():
                        future.set_exception(RuntimeError(f"server said: {frame}"))
            elif kind == "run":
                run = frame["run"]
                ended = run["status"] in ("completed", "failed", "cancelled")
                if ended and not self._resolve(f"r:{run['id']}", run["status"]):
                    self._ended[run["id"]] = run["status"]
