"""One connection to a server through the SDK's public client (`mcp.Client` over
`streamable_http_client`), with the declared headers and, per user, a bearer token.

The SDK turns an HTTP 401/403 into a generic JSON-RPC error; a response hook on our own
HTTP client sees the status, so a refused credential can be told apart from a broken
server (the cell then says the connection needs renewing).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

import httpx2
from mcp import Client, MCPError
from mcp.client.session import ElicitationFnT
from mcp.client.streamable_http import streamable_http_client

from app.tools.mcp.bounded import BoundedJsonTransport
from app.tools.mcp_config import McpServerSpec

DENIED_STATUSES = frozenset({401, 403})


@dataclass
class StatusWatch:
    """The last refusal (401/403) any request of the connection got, and the limit an
    answer passed (`max_message_bytes`), if one did."""

    denied: int | None = None
    too_large: int | None = None

    async def __call__(self, response: httpx2.Response) -> None:
        if response.status_code in DENIED_STATUSES:
            self.denied = response.status_code


class MissingCredential(RuntimeError):
    """An environment variable a header needs is unset."""


@asynccontextmanager
async def connect(
    spec: McpServerSpec,
    watch: StatusWatch,
    *,
    bearer: str | None = None,
    seconds: float | None = None,
    elicitation: ElicitationFnT | None = None,
) -> AsyncIterator[Client]:
    headers = spec.header_values()
    if isinstance(headers, str):
        raise MissingCredential(f"environment variable {headers} is unset")
    if bearer is not None:
        headers = {**headers, "Authorization": f"Bearer {bearer}"}
    limit = seconds or spec.timeout_seconds
    http = httpx2.AsyncClient(
        headers=headers,
        timeout=httpx2.Timeout(limit, read=limit + 5),
        event_hooks={"response": [watch]},
        transport=BoundedJsonTransport(spec.max_message_bytes, watch),
    )
    transport = streamable_http_client(
        spec.url, http_client=http, max_sse_event_size=spec.max_message_bytes
    )
    async with (
        http,
        Client(
            transport,
            read_timeout_seconds=limit,
            elicitation_callback=elicitation,
        ) as client,
    ):
        yield client


def leaf_exceptions(exc: BaseException) -> list[BaseException]:
    """The exceptions inside (nested) groups: the SDK raises from anyio task groups."""
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for inner in exc.exceptions for leaf in leaf_exceptions(inner)]
    return [exc]


def describe_failure(exc: BaseException) -> str:
    """A short, safe reason (no URL, no header): what went wrong, not where."""
    leaves = leaf_exceptions(exc)
    first = leaves[0] if leaves else exc
    if isinstance(first, MissingCredential):
        return "its credentials are not configured"
    if isinstance(first, httpx2.ConnectError | httpx2.ConnectTimeout):
        return "the server cannot be reached"
    if isinstance(first, httpx2.TimeoutException | TimeoutError):
        return "the server did not answer in time"
    if isinstance(first, httpx2.TransportError):
        return "the connection to the server failed"
    if isinstance(first, MCPError):
        return f"the server answered with an error: {first.error.message[:200]}"
    return f"the server answered with an error ({type(first).__name__})"
