"""Tiny local HTTP(S) servers for the web tool tests: canaries that count hits, pages,
redirects and a SearXNG-like JSON endpoint. Loopback only, port chosen by the OS."""

from __future__ import annotations

import asyncio
import contextlib
import ssl
from collections.abc import Callable
from dataclasses import dataclass, field

Handler = Callable[["Request"], "Response"]


@dataclass
class Request:
    method: str
    target: str
    headers: dict[str, str]

    @property
    def path(self) -> str:
        return self.target.split("?", 1)[0]


@dataclass
class Response:
    status: int = 200
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    hang: bool = False  # accept the request, never answer (time caps)


def html(text: str, status: int = 200) -> Response:
    return Response(status, text.encode(), {"Content-Type": "text/html; charset=utf-8"})


def redirect(location: str, status: int = 302) -> Response:
    return Response(status, b"", {"Location": location})


@dataclass
class LocalServer:
    host: str
    handler: Handler
    ssl_context: ssl.SSLContext | None = None
    port: int = 0
    requests: list[Request] = field(default_factory=list)
    sni_names: list[str | None] = field(default_factory=list)
    _server: asyncio.Server | None = None
    _hung: list[asyncio.Event] = field(default_factory=list)

    @property
    def hits(self) -> int:
        return len(self.requests)

    @property
    def origin(self) -> str:
        scheme = "https" if self.ssl_context else "http"
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{scheme}://{host}:{self.port}"

    async def start(self) -> LocalServer:
        if self.ssl_context is not None:
            self.ssl_context.sni_callback = lambda sock, name, ctx: self.sni_names.append(name)
        self._server = await asyncio.start_server(
            self._serve, self.host, self.port, ssl=self.ssl_context
        )
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def stop(self) -> None:
        for event in self._hung:
            event.set()
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError):
            writer.close()
            return
        lines = head.decode("latin-1").split("\r\n")
        method, target, _ = lines[0].split(" ", 2)
        headers = {}
        for line in lines[1:]:
            if ":" in line:
                name, value = line.split(":", 1)
                headers[name.strip().lower()] = value.strip()
        request = Request(method, target, headers)
        self.requests.append(request)
        response = self.handler(request)
        if response.hang:
            event = asyncio.Event()
            self._hung.append(event)
            await event.wait()
        else:
            head_lines = [f"HTTP/1.1 {response.status} X"]
            extra = {"Content-Length": str(len(response.body)), "Connection": "close"}
            for name, value in {**extra, **response.headers}.items():
                head_lines.append(f"{name}: {value}")
            writer.write(("\r\n".join(head_lines) + "\r\n\r\n").encode() + response.body)
            with contextlib.suppress(ConnectionError):
                await writer.drain()
        writer.close()


def canary_handler(request: Request) -> Response:
    return html("<html><body>CANARY: this server must never be reached</body></html>")
