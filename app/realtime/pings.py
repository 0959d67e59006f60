"""Protocol-level pings count as client activity (what iOS `URLSessionWebSocketTask.sendPing`
sends), not only `{"type": "ping"}` frames.

ASGI has no ping event: uvicorn answers a client's ping itself (its websockets, sans-I/O
and wsproto implementations all write the pong from the protocol object) and tells the
app nothing, and adds no scope extension for it. This subclass of uvicorn's default
implementation (`--ws auto` picks the sans-I/O one when `websockets` is installed) also
notes when the client last pinged, in the ASGI scope extension `EXTENSION`, which the
socket's idle timeout reads (connection.py).

`litestar run` passes no `ws` option to uvicorn (and `UVICORN_WS` is read only by the
uvicorn command), so importing the app makes this class what uvicorn's `--ws auto` (its
default) resolves to: `litestar run` loads the app before it configures uvicorn. An
explicit `--ws …` still wins.
"""

from __future__ import annotations

from typing import Any

import uvicorn.config
from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol
from websockets.http11 import Request

EXTENSION = "toolcells.client_pings"


class ClientPings:
    """When the client last sent a protocol ping (event loop time), or None."""

    __slots__ = ("last",)

    def __init__(self) -> None:
        self.last: float | None = None


def client_pings(scope: Any) -> ClientPings | None:
    """The socket's ping record, when the server provides one."""
    record = scope.get("extensions", {}).get(EXTENSION)
    return record if isinstance(record, ClientPings) else None


class PingAwareProtocol(WebSocketsSansIOProtocol):
    client_pings: ClientPings | None = None

    def handle_connect(self, event: Request) -> None:
        self.client_pings = ClientPings()
        super().handle_connect(event)
        scope = getattr(self, "scope", None)  # unset when the handshake was refused
        if scope is not None:
            scope["extensions"][EXTENSION] = self.client_pings

    def handle_ping(self) -> None:
        if self.client_pings is not None:
            self.client_pings.last = self.loop.time()
        super().handle_ping()


def make_default_for_uvicorn() -> None:
    """uvicorn's `--ws auto` picks this protocol from now on (in this process)."""
    uvicorn.config.WS_PROTOCOLS["auto"] = f"{__name__}:{PingAwareProtocol.__name__}"
