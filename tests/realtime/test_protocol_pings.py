"""Protocol-level pings (iOS `URLSessionWebSocketTask.sendPing`) keep a socket from idling.

Idle sockets are closed with 4408 after WS_IDLE_TIMEOUT without client activity. A client
that only sends protocol pings (here websockets' keepalive, every 0.2 s) stays connected
for several idle timeouts under `litestar run` (uvicorn's default protocol), while
sockets without pings opened meanwhile are closed one after another.
"""

from __future__ import annotations

import sys

import httpx

from tests.conftest import ApiUser
from tests.realtime.support import WsClient, server_process, ws_url

# The README's command: `litestar run` gives uvicorn no `ws` option ("auto").
LITESTAR_RUN = (sys.executable, "-m", "litestar", "run", "--host", "127.0.0.1", "--port", "{port}")


async def test_protocol_pings_keep_the_socket_open(
    process_env: dict[str, str], client: httpx.AsyncClient, alice: ApiUser
) -> None:
    env = {**process_env, "WS_IDLE_TIMEOUT": "1"}
    async with server_process(env, *LITESTAR_RUN) as base:
        url = ws_url(base)
        async with WsClient.connect(url, alice.token, ping_interval=0.2) as pinging:
            for _ in range(3):  # three idle timeouts pass, one after another
                async with WsClient.connect(url, alice.token, ping_interval=None) as silent:
                    assert await silent.wait_closed() == 4408
            assert pinging.close_code is None
            await pinging.send({"type": "ping"})
            await pinging.wait_type("pong")
            assert not [f for f in pinging.frames if f["type"] != "pong"]
