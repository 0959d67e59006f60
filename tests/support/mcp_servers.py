"""Real MCP servers for the tests, built with the official SDK (`MCPServer`) and served
over stateless Streamable HTTP on real sockets (uvicorn in a thread, like the demo)."""

from __future__ import annotations

import asyncio
import base64
import io
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Annotated, Any

from mcp.server.mcpserver import (
    AcceptedElicitation,
    Context,
    Elicit,
    ElicitationResult,
    MCPServer,
    Resolve,
)
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, ImageContent, TextContent
from PIL import Image
from pydantic import BaseModel

from app.tools.mcp.demo_server import RunningServer, serve_in_thread, streamable_app

TOKEN = "s3cret-token"


class Seats(BaseModel):
    seats: int


async def ask_seats(show: str) -> Elicit[Seats]:
    return Elicit(f"How many seats for {show}?", Seats)


class Counted(BaseModel):
    steps: int
    note: str


def chart_png() -> str:
    """A small chart-like PNG, base64 as MCP carries images."""
    image = Image.new("RGB", (64, 48), (250, 250, 250))
    image.paste((40, 90, 200), (8, 20, 24, 48))
    out = io.BytesIO()
    image.save(out, "PNG")
    return base64.b64encode(out.getvalue()).decode()


# What became of each `hang` call on the test servers: "started", then "cancelled" when the
# client's cancel reached the server (in this process: the servers run on threads).
HANGS: list[str] = []


def build_test_server() -> MCPServer:
    server = MCPServer("toolcells-test")

    @server.tool()
    async def count(steps: int, ctx: Context) -> Counted:
        """Count up to `steps`, reporting progress after each one."""
        for index in range(steps):
            await asyncio.sleep(0.05)
            await ctx.report_progress(index + 1, steps, f"Step {index + 1} of {steps}")
        return Counted(steps=steps, note=f"counted to {steps}")

    @server.tool(structured_output=False)
    def echo(text: str) -> str:
        """Say `text` back."""
        return f"echo: {text}"

    @server.tool()
    def fail(reason: str) -> str:
        """Always fails, saying why."""
        raise ToolError(f"cannot do that: {reason}")

    @server.tool()
    async def hang() -> str:
        """Never answers (until the client gives the call up: then it is cancelled here)."""
        HANGS.append("started")
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            HANGS.append("cancelled")
            raise
        return "never"

    @server.tool()
    async def grow(ctx: Context) -> str:
        """Adds a tool `extra` and tells listeners the list changed."""

        def extra() -> str:
            """A tool added while the server runs."""
            return "extra"

        server.add_tool(extra, name="extra")
        await ctx.notify_tools_changed()
        return "grown"

    @server.tool(structured_output=False)
    async def book(
        show: str, answer: Annotated[ElicitationResult[Seats], Resolve(ask_seats)]
    ) -> str:
        """Book seats for a show, asking the user how many."""
        if isinstance(answer, AcceptedElicitation):
            return f"booked {answer.data.seats} for {show}"
        return f"not booked ({answer.action})"

    @server.tool()
    def flood(rows: int) -> CallToolResult:
        """A hostile result: only structured content, `rows` rows of ~130 bytes each."""
        table = [{"row": index, "payload": "x" * 100} for index in range(rows)]
        return CallToolResult(content=[], structured_content={"rows": table})

    @server.tool()
    def chart(title: str) -> CallToolResult:
        """An image result, as a charting or map tool returns one (a PNG, base64)."""
        return CallToolResult(
            content=[
                TextContent(type="text", text=f"Here is {title}."),
                ImageContent(type="image", data=chart_png(), mime_type="image/png"),
            ]
        )

    @server.tool()
    def secret_only() -> str:
        """Hidden by the allow-list in most tests."""
        return "secret"

    return server


def bearer_required(app: Any, token: str = TOKEN) -> Any:
    """The app behind a check of `Authorization: Bearer <token>` (401 otherwise)."""

    async def guarded(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            headers = dict(scope.get("headers") or [])
            if headers.get(b"authorization") != f"Bearer {token}".encode():
                await send({"type": "http.response.start", "status": 401,
                            "headers": [(b"content-type", b"text/plain")]})  # fmt: skip
                await send({"type": "http.response.body", "body": b"unauthorized"})
                return
        await app(scope, receive, send)

    return guarded


@contextmanager
def running(app: Any) -> Iterator[RunningServer]:
    server = serve_in_thread(app)
    try:
        yield server
    finally:
        server.stop()


def build_test_app() -> Any:
    return streamable_app(build_test_server())
