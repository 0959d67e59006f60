"""A client that cannot keep up is closed with 4429, resumes, and loses nothing.

The slow client is a raw socket driven by websockets' sans-I/O protocol: a regular
client library reads everything into memory in the background, so it is never slow.
"""

from __future__ import annotations

import asyncio
import json
import socket
import uuid
from typing import Any

import httpx
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker
from websockets.client import ClientProtocol
from websockets.frames import Opcode
from websockets.http11 import Response
from websockets.uri import parse_uri

from tests.conftest import ApiUser
from tests.realtime.conftest import ServerFactory, new_thread
from tests.realtime.support import WAIT, ThreadState, WsClient, fetch_messages, write_create


class StalledClient:
    """Connects, subscribes, then reads nothing until `drain()`."""

    def __init__(self, url: str, token: str) -> None:
        self.protocol = ClientProtocol(parse_uri(url))
        self.token = token
        self.frames: list[dict[str, Any]] = []

    async def connect(self, port: int) -> None:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        sock.setblocking(False)
        await asyncio.get_running_loop().sock_connect(sock, ("127.0.0.1", port))
        self.reader, self.writer = await asyncio.open_connection(sock=sock, limit=4096)
        request = self.protocol.connect()
        request.headers["Authorization"] = f"Bearer {self.token}"
        self.protocol.send_request(request)
        self._flush()
        while not any(isinstance(e, Response) for e in await self._receive()):
            pass

    def send(self, frame: dict[str, Any]) -> None:
        self.protocol.send_text(json.dumps(frame).encode())
        self._flush()

    async def drain(self) -> int | None:
        """Read everything, then the close code."""
        async with asyncio.timeout(WAIT):
            while self.protocol.close_rcvd is None:
                for event in await self._receive():
                    if getattr(event, "opcode", None) is Opcode.TEXT:
                        self.frames.append(json.loads(event.data))
        self.writer.close()
        return self.protocol.close_rcvd.code

    async def _receive(self) -> list[Any]:
        data = await self.reader.read(65536)
        if data:
            self.protocol.receive_data(data)
        else:
            self.protocol.receive_eof()
        self._flush()
        return self.protocol.events_received()

    def _flush(self) -> None:
        data = b"".join(self.protocol.data_to_send())
        if data:
            self.writer.write(data)


async def test_slow_consumer_is_closed_4429_and_resumes_losslessly(
    start_server: ServerFactory,
    client: httpx.AsyncClient,
    alice: ApiUser,
    session_factory: async_sessionmaker[AsyncSession],
) -> None:
    async with (
        start_server(ws_send_queue_size=4, send_buffer=8192) as server,
        httpx.AsyncClient(base_url=server.http) as http,
    ):
        thread_id = await new_thread(http, alice)
        stalled = StalledClient(server.ws, alice.token)
        await stalled.connect(server.port)
        stalled.send({"type": "subscribe", "thread_id": thread_id, "after_seq": 0})
        for index in range(60):  # ~300 KB the client does not read
            await write_create(
                session_factory, uuid.UUID(thread_id), role="user", content=f"{index} " + "x" * 5000
            )
        assert await stalled.drain() == 4429

        state = ThreadState()
        for frame in stalled.frames:
            if frame["type"] == "message":
                state.apply(frame)
        assert 0 < state.last_seq < 60  # it got some, then was cut off

        def apply(frame: dict[str, Any]) -> None:
            if frame["type"] == "message":
                state.apply(frame)

        async with WsClient.connect(server.ws, alice.token, on_frame=apply) as ws:
            await ws.subscribe(thread_id, after_seq=state.last_seq)
            await ws.wait_type("subscribed", last_seq=60)
        fresh = await fetch_messages(http, thread_id, alice.headers)
    assert state.messages == fresh["messages"]
