"""A real server for socket tests, a protocol client, and writes through the writer."""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

import httpx
import uvicorn
from litestar import Litestar
from redis.asyncio import Redis
from redis.exceptions import ConnectionError as RedisConnectionError
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

from app.db.models import ThreadMessage
from app.settings import PROJECT_ROOT
from app.threads import writer

WAIT = 15.0


def free_socket(send_buffer: int | None = None) -> socket.socket:
    """A listening socket on a free loopback port; accepted sockets inherit `send_buffer`."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if send_buffer:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, send_buffer)
    sock.bind(("127.0.0.1", 0))
    return sock


@dataclass
class Server:
    port: int
    app: Litestar

    @property
    def http(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def ws(self) -> str:
        return f"ws://127.0.0.1:{self.port}/api/ws"


@asynccontextmanager
async def serve(app: Litestar, sock: socket.socket | None = None) -> AsyncIterator[Server]:
    """Run `app` under uvicorn in this event loop, on a free loopback port."""
    sock = sock or free_socket()
    config = uvicorn.Config(app, log_level="warning", lifespan="on", ws_ping_interval=None)
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve(sockets=[sock]))
    async with asyncio.timeout(WAIT):
        while not server.started:
            if task.done():
                task.result()
            await asyncio.sleep(0.01)  # polling uvicorn's `started` flag (no event exists)
    try:
        yield Server(port=sock.getsockname()[1], app=app)
    finally:
        server.should_exit = True
        await task


def free_port() -> int:
    with free_socket() as sock:
        return int(sock.getsockname()[1])


@asynccontextmanager
async def server_process(env: dict[str, str], *command: str) -> AsyncIterator[str]:
    """A server process (`uvicorn app:create_app`, or `command` with `{port}` filled in);
    yields its base URL once healthy."""
    port = free_port()
    command = command or (
        *(sys.executable, "-m", "uvicorn", "app:create_app", "--factory"),
        *("--host", "127.0.0.1", "--port", "{port}", "--log-level", "warning"),
    )
    process = await asyncio.create_subprocess_exec(
        *(part.format(port=port) for part in command), cwd=PROJECT_ROOT, env=env
    )
    base = f"http://127.0.0.1:{port}"
    try:
        async with httpx.AsyncClient(base_url=base) as http, asyncio.timeout(60):
            while True:
                assert process.returncode is None, "server process exited"
                try:
                    if (await http.get("/api/health")).status_code == 200:
                        break
                except httpx.TransportError:
                    await asyncio.sleep(0.1)  # polling: the process is still starting
        yield base
    finally:
        process.terminate()
        try:
            async with asyncio.timeout(15):
                await process.wait()
        except TimeoutError:
            process.kill()
            await process.wait()


def ws_url(base: str) -> str:
    return base.replace("http://", "ws://") + "/api/ws"


@dataclass
class TwoProcesses:
    ws: str  # the socket URL of the first process
    http: httpx.AsyncClient  # a client of the second


@asynccontextmanager
async def two_processes(env: dict[str, str]) -> AsyncIterator[TwoProcesses]:
    """Two server processes sharing `env`'s database and Redis: sockets on the first,
    HTTP to the second."""
    async with (
        server_process(env) as first,
        server_process(env) as second,
        httpx.AsyncClient(base_url=second) as http,
    ):
        yield TwoProcesses(ws=ws_url(first), http=http)


class RedisServer:
    """A redis-server of the test's own (never the shared one), stopped and started at will."""

    def __init__(self) -> None:
        self.port = free_port()
        self.process: asyncio.subprocess.Process | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    async def start(self) -> None:
        self.process = await asyncio.create_subprocess_exec(
            *("redis-server", "--port", str(self.port), "--bind", "127.0.0.1"),
            *("--save", "", "--appendonly", "no"),
            stdout=subprocess.DEVNULL,
        )
        client = Redis.from_url(self.url)
        try:
            async with asyncio.timeout(WAIT):
                while True:
                    assert self.process.returncode is None, "redis-server exited"
                    try:
                        await client.ping()
                        return
                    except RedisConnectionError:
                        await asyncio.sleep(0.05)  # polling: redis-server is still starting
        finally:
            await client.aclose()

    async def stop(self) -> None:
        if self.process is not None and self.process.returncode is None:
            self.process.terminate()
            await self.process.wait()
        self.process = None


@dataclass
class ThreadState:
    """What a client holds for one thread: messages by id, the highest seq seen, and the
    leaf of the branch shown (as `branch` frames say)."""

    messages: dict[str, dict[str, Any]] = field(default_factory=dict)
    last_seq: int = 0
    current_leaf_id: str | None = None

    def apply(self, frame: dict[str, Any]) -> None:
        """A `message` frame (upsert by id) or a `branch` frame (the leaf, deletes)."""
        if frame["type"] == "branch":
            self.current_leaf_id = frame["current_leaf_id"]
            for message_id in frame["deleted_message_ids"]:
                self.messages.pop(message_id, None)
        else:
            message = frame["message"]
            held = self.messages.get(message["id"])
            if held is None or held["seq"] <= frame["seq"]:
                self.messages[message["id"]] = message
            if held is None and message["parent_id"] == self.current_leaf_id:
                self.current_leaf_id = message["id"]  # written below the leaf: the new leaf
        self.last_seq = max(self.last_seq, frame["seq"])

    def branch(self) -> list[dict[str, Any]]:
        """The messages shown: from the first to the leaf (walking `parent_id` up)."""
        shown, at = [], self.current_leaf_id
        while at is not None:
            shown.insert(0, self.messages[at])
            at = self.messages[at]["parent_id"]
        return shown


class WsClient:
    """A protocol client that keeps every frame and applies message frames."""

    def __init__(self, conn: ClientConnection, on_frame: Any = None, paused: bool = False) -> None:
        self.conn = conn
        self.on_frame = on_frame
        self.reading = asyncio.Event()
        if not paused:
            self.reading.set()
        self.frames: list[dict[str, Any]] = []
        self._new = asyncio.Condition()
        self._reader = asyncio.create_task(self._read())
        self.close_code: int | None = None

    @classmethod
    @asynccontextmanager
    async def connect(
        cls,
        url: str,
        token: str | None = None,
        *,
        query_token: bool = False,
        on_frame: Any = None,
        paused: bool = False,
        **kwargs: Any,
    ) -> AsyncIterator[WsClient]:
        headers = {}
        if token and query_token:
            url = f"{url}?token={token}"
        elif token:
            headers["Authorization"] = f"Bearer {token}"
        async with connect(url, additional_headers=headers, **kwargs) as conn:
            client = cls(conn, on_frame, paused)
            try:
                yield client
            finally:
                # Close while the reader still drains: a client that stops reading never
                # sees the server's close frame behind the data (websockets' max_queue).
                client.reading.set()
                await conn.close()
                client._reader.cancel()

    async def _read(self) -> None:
        await self.reading.wait()
        try:
            async for raw in self.conn:
                frame = json.loads(raw)
                if self.on_frame is not None:
                    self.on_frame(frame)
                async with self._new:
                    self.frames.append(frame)
                    self._new.notify_all()
        except ConnectionClosed:
            pass
        finally:
            self.close_code = self.conn.close_code
            async with self._new:
                self._new.notify_all()

    async def send(self, frame: dict[str, Any] | str) -> None:
        await self.conn.send(frame if isinstance(frame, str) else json.dumps(frame))

    async def subscribe(self, thread_id: Any, after_seq: int = 0) -> None:
        await self.send({"type": "subscribe", "thread_id": str(thread_id), "after_seq": after_seq})

    async def wait_for(self, predicate: Any, within: float = WAIT) -> dict[str, Any]:
        """The first frame (kept so far or to come) that satisfies `predicate`."""
        async with asyncio.timeout(within), self._new:
            while True:
                for frame in self.frames:
                    if predicate(frame):
                        return frame
                if self._reader.done():
                    raise AssertionError(f"socket closed ({self.close_code}) before the frame")
                await self._new.wait()

    async def wait_type(self, kind: str, within: float = WAIT, **fields: Any) -> dict[str, Any]:
        return await self.wait_for(
            lambda f: f["type"] == kind and all(f.get(k) == v for k, v in fields.items()), within
        )

    async def wait_closed(self, within: float = WAIT) -> int | None:
        async with asyncio.timeout(within):
            await asyncio.shield(self._reader)
        return self.close_code


async def fetch_messages(http: httpx.AsyncClient, thread_id: Any, headers: dict[str, str]) -> dict:
    """GET …/messages?after_seq, every page: {id: message} and the last seq."""
    after, items, last_seq = 0, {}, 0
    while True:
        response = await http.get(
            f"/api/threads/{thread_id}/messages", params={"after_seq": after}, headers=headers
        )
        assert response.status_code == 200, response.text
        page = response.json()
        for item in page["items"]:
            items[item["id"]] = item
            after = max(after, item["seq"])
        last_seq = page["last_seq"]
        if not page["has_more"]:
            return {"messages": items, "last_seq": last_seq}


# -- writes through the one writer, in short committed sessions ---------------------
async def write_create(
    factory: async_sessionmaker[AsyncSession], thread_id: UUID, **fields: Any
) -> ThreadMessage:
    async with factory() as session:
        message = await writer.create_message(session, thread_id, **fields)
        await session.commit()
        return message


async def write_update(
    factory: async_sessionmaker[AsyncSession], message_id: UUID, **changes: Any
) -> ThreadMessage:
    async with factory() as session:
        message = await session.get(ThreadMessage, message_id)
        assert message is not None
        await writer.update_message(session, message, **changes)
        await session.commit()
        return message
