"""`/api/ws`: the realtime socket (protocol: CONTRACT.md, openapi/asyncapi.json).

Auth by `Authorization: Bearer` or `?token=`. The socket is accepted first so that a bad
token can be told apart from a network error: it is then closed with 4401, as is an open
socket whose token is revoked or expires (app/realtime/tokens.py).
"""

from __future__ import annotations

from litestar import WebSocket, websocket

from app.accounts.deps import bearer_token
from app.db.errors import database_unavailable_now
from app.lib.security import token_digest
from app.observability import metrics
from app.realtime.channels import RealtimeChannels
from app.realtime.connection import Connection
from app.realtime.events import CLOSE_TOO_SLOW, CLOSE_UNAUTHORIZED


@websocket("/api/ws", name="realtime_socket")
async def realtime_socket(socket: WebSocket, channels: RealtimeChannels) -> None:
    """Subscribe to threads; receive their message changes, runs and deltas."""
    token = bearer_token(socket)
    await socket.accept()
    user_id = None
    if token and len(token) <= 200:
        try:
            user_id = await channels.store.user_id_for_token(token)
        except Exception:
            if not database_unavailable_now():
                raise
            await socket.close(code=CLOSE_TOO_SLOW, reason="The database is busy; retry.")
            return
    if token is None or user_id is None:
        await socket.close(code=CLOSE_UNAUTHORIZED, reason="Invalid or missing token.")
        return
    connection = Connection(socket, channels, user_id)
    # Revoked or expired later (the check above ran once): closed with 4401 too.
    with (
        channels.tokens.watch(token_digest(token), connection.close_unauthorized),
        metrics.open_socket(),
    ):
        await connection.serve()
