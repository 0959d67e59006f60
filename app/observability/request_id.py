"""`X-Request-ID`: one id per request or socket, on its response and in every log line.

A client may send its own id (a phone correlating its logs with ours); it is kept when it
is sane (1-128 characters of letters, digits and `-_.:/+=@`), else replaced by a fresh one,
so a header cannot smuggle newlines or megabytes into the logs. The middleware puts the id
in a context variable for the request's task (and the tasks it starts, such as a socket's
subscriptions); `RequestIdFilter` copies it onto every log record.

The middleware runs for routed requests; `before_send` covers the rest (an unknown path's
404 is answered by the router, outside any route's middleware) and writes the header on
every response, errors and the websocket handshake included.
"""

from __future__ import annotations

import logging
import re
import uuid
from contextvars import ContextVar

from litestar.datastructures import MutableScopeHeaders
from litestar.enums import ScopeType
from litestar.middleware import ASGIMiddleware
from litestar.types import ASGIApp, Message, Receive, Scope, Send

HEADER = "X-Request-ID"
_HEADER_KEY = HEADER.lower().encode()
_STATE_KEY = "request_id"
_SANE = re.compile(r"[A-Za-z0-9\-_.:/+=@]{1,128}")
NO_REQUEST = "-"  # in log lines written outside any request (the runner, startup)

_current: ContextVar[str] = ContextVar("request_id", default=NO_REQUEST)


def current_request_id() -> str:
    return _current.get()


def sane(value: str | None) -> bool:
    return value is not None and _SANE.fullmatch(value) is not None


def _from_client(scope: Scope) -> str | None:
    for key, value in scope.get("headers", ()):
        if key.lower() == _HEADER_KEY:
            text = value.decode("latin-1")
            return text if sane(text) else None
    return None


def request_id_of(scope: Scope) -> str:
    """The scope's id: kept in its state once chosen (the client's, or a fresh one)."""
    state = scope.setdefault("state", {})
    request_id = state.get(_STATE_KEY)
    if request_id is None:
        request_id = _from_client(scope) or uuid.uuid4().hex
        state[_STATE_KEY] = request_id
    return request_id


class RequestIdMiddleware(ASGIMiddleware):
    scopes = (ScopeType.HTTP, ScopeType.WEBSOCKET)

    async def handle(self, scope: Scope, receive: Receive, send: Send, next_app: ASGIApp) -> None:
        token = _current.set(request_id_of(scope))
        try:
            await next_app(scope, receive, send)
        finally:
            _current.reset(token)


async def add_request_id_header(message: Message, scope: Scope) -> None:
    """`before_send`: the header on every HTTP response and websocket accept."""
    if message["type"] == "http.response.start":
        MutableScopeHeaders.from_message(message)[HEADER] = request_id_of(scope)
    elif message["type"] == "websocket.accept":
        headers = list(message.get("headers") or ())
        headers.append((_HEADER_KEY, request_id_of(scope).encode()))
        message["headers"] = headers  # type: ignore[typeddict-unknown-key]


class RequestIdFilter(logging.Filter):
    """Gives every record a `request_id` (the current request's, or "-")."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not hasattr(record, "request_id"):
            record.request_id = _current.get()
        return True
