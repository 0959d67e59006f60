"""The bundled demo MCP server: started with the app (MCP_DEMO_SERVER) on a free local
port, so a new user sees an MCP cell, with live progress, offline.

Built with the official SDK's `MCPServer`, served over stateless Streamable HTTP by
uvicorn in a thread of its own (its own event loop: it never slows the app's, and uvicorn
installs no signal handlers outside the main thread).
"""

from __future__ import annotations

import asyncio
import logging
import random
import socket
import threading
from dataclasses import dataclass
from typing import Any

import uvicorn
from mcp.server.mcpserver import Context, MCPServer
from pydantic import BaseModel, Field

logger = logging.getLogger("app.tools.mcp")


class DiceRoll(BaseModel):
    rolls: list[int]
    total: int


def build_demo_server() -> MCPServer:
    server = MCPServer("toolcells-demo", instructions="Small offline tools for the demo.")

    @server.tool()
    async def roll_dice(
        ctx: Context,
        count: int = Field(default=3, ge=1, le=10, description="How many dice."),
        sides: int = Field(default=6, ge=2, le=100, description="Sides of each die."),
    ) -> DiceRoll:
        """Roll dice one at a time (reports progress after each die) and add them up."""
        rolls: list[int] = []
        for index in range(count):
            await asyncio.sleep(0.4)  # slow enough to watch the cell count up
            rolls.append(random.randint(1, sides))  # dice, not secrets
            await ctx.report_progress(
                index + 1, count, f"Rolled {index + 1} of {count}: {rolls[-1]}"
            )
        return DiceRoll(rolls=rolls, total=sum(rolls))

    return server


@dataclass
class RunningServer:
    url: str
    server: uvicorn.Server
    thread: threading.Thread

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=5)


def streamable_app(server: MCPServer) -> Any:
    """The server's stateless Streamable HTTP ASGI app (endpoint `/mcp`)."""
    return server.streamable_http_app(stateless_http=True)


def free_socket(host: str = "127.0.0.1") -> socket.socket:
    """A socket bound to a free port of `host` (its URL is known before the app is built)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind((host, 0))
    return sock


def serve_in_thread(
    app: Any, host: str = "127.0.0.1", sock: socket.socket | None = None
) -> RunningServer:
    """Serve the ASGI `app` at a free port of `host` (or on `sock`); returns once it accepts
    connections. A call still running at shutdown is given a second, then dropped."""
    sock = sock or free_socket(host)
    port = sock.getsockname()[1]
    # No logging setup of its own: uvicorn.Config's would reconfigure the whole process
    # (the app's handlers and its uvicorn loggers, silenced to this server's level;
    # `access_log=False` would empty the shared uvicorn.access logger too).
    config = uvicorn.Config(
        app,
        log_config=None,
        log_level=None,
        lifespan="on",
        timeout_graceful_shutdown=1,
    )
    http = uvicorn.Server(config)
    thread = threading.Thread(
        target=lambda: asyncio.run(http.serve(sockets=[sock])), name="mcp-demo", daemon=True
    )
    thread.start()
    for _ in range(200):  # ~10 s at most; it starts in well under a second
        if http.started or not thread.is_alive():
            break
        threading.Event().wait(0.05)
    if not http.started:
        raise RuntimeError("the demo MCP server did not start")
    return RunningServer(f"http://{host}:{port}/mcp", http, thread)
