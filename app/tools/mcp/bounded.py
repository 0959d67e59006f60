"""MCP answers bounded in bytes before they are read whole.

The SDK bounds one event of a streamed (SSE) answer (`max_sse_event_size`) but reads a
JSON answer whole, and then parses it on the event loop: a server answering megabytes
would hold the process's memory and stall every user's socket while it is parsed. Our
HTTP client's transport (httpx's public extension point) refuses a JSON answer past the
server's `max_message_bytes`: by its Content-Length before a byte of it is read, or as
its bytes arrive. The refusal is noted on the connection's watch, so the cell says why.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Protocol

import httpx2


class MessageTooLarge(httpx2.StreamError):
    """The server's answer is larger than its `max_message_bytes`."""


class TooLargeWatch(Protocol):
    too_large: int | None  # the limit an answer passed, if one did


class _BoundedBody(httpx2.AsyncByteStream):
    """Refused at its first read when its Content-Length says it is too large (no byte of
    it is read), else once its bytes pass the limit. Raised while the SDK reads the
    answer, the refusal answers the one request with an error (the session lives on)."""

    def __init__(
        self, inner: httpx2.AsyncByteStream, declared: int | None, limit: int, watch: TooLargeWatch
    ) -> None:
        self.inner, self.declared, self.limit, self.watch = inner, declared, limit, watch

    async def __aiter__(self) -> AsyncIterator[bytes]:
        if self.declared is not None and self.declared > self.limit:
            raise _refused(self.limit, self.watch)
        read = 0
        async for chunk in self.inner:
            read += len(chunk)
            if read > self.limit:
                raise _refused(self.limit, self.watch)
            yield chunk

    async def aclose(self) -> None:
        await self.inner.aclose()


def _refused(limit: int, watch: TooLargeWatch) -> MessageTooLarge:
    watch.too_large = limit
    return MessageTooLarge(f"the answer is larger than {limit} bytes")


class BoundedJsonTransport(httpx2.AsyncBaseTransport):
    """httpx's own transport, with JSON answers bounded to `limit` bytes."""

    def __init__(self, limit: int, watch: TooLargeWatch) -> None:
        self.inner = httpx2.AsyncHTTPTransport()
        self.limit, self.watch = limit, watch

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        response = await self.inner.handle_async_request(request)
        content_type = response.headers.get("content-type", "").lower()
        if not content_type.startswith("application/json"):
            return response  # an SSE stream: the SDK bounds each of its events
        length = response.headers.get("content-length", "")
        declared = int(length) if length.isdigit() else None
        body = _BoundedBody(response.stream, declared, self.limit, self.watch)  # type: ignore[arg-type]
        return httpx2.Response(
            response.status_code,
            headers=response.headers,
            stream=body,
            extensions=response.extensions,
        )

    async def aclose(self) -> None:
        await self.inner.aclose()
