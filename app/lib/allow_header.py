"""Workaround: the `Allow` of Litestar 2's automatic OPTIONS answer.

With several handlers on one path (GET, PATCH and DELETE of a thread), Litestar 2 answers
OPTIONS with the methods of the first handler only (litestar-org/litestar#4169, fixed in
Litestar 3). This middleware writes the path's methods, read from the app's public route
table, with HEAD wherever there is GET (app/lib/head_requests.py answers it). tests/test_upstream_workarounds.py fails once Litestar answers right by itself:
then delete this module and its entry in app/asgi.py.
"""

from __future__ import annotations

from litestar.enums import ScopeType
from litestar.middleware import ASGIMiddleware
from litestar.types import ASGIApp, Message, Receive, Scope, Send


def _methods_of(scope: Scope) -> str | None:
    paths = getattr(scope.get("route_handler"), "paths", None) or set()
    methods: set[str] = set()
    for route in scope["app"].routes:
        if route.path in paths:
            methods |= set(getattr(route, "methods", ()))
    if "GET" in methods:  # served as the GET (app/lib/head_requests.py)
        methods.add("HEAD")
    return ", ".join(sorted(methods)) if methods else None


class AllowHeaderMiddleware(ASGIMiddleware):
    scopes = (ScopeType.HTTP,)

    async def handle(self, scope: Scope, receive: Receive, send: Send, next_app: ASGIApp) -> None:
        allow = _methods_of(scope) if scope["method"] == "OPTIONS" else None
        if allow is None:
            await next_app(scope, receive, send)
            return

        async def send_with_allow(message: Message) -> None:
            if message["type"] == "http.response.start":
                kept = [(k, v) for k, v in message.get("headers", []) if k.lower() != b"allow"]
                message = {**message, "headers": [*kept, (b"allow", allow.encode())]}  # type: ignore[typeddict-item]
            await send(message)

        await next_app(scope, receive, send_with_allow)
