"""Workaround: HEAD on the GET routes (Litestar 2 makes no HEAD of a GET and answers 405).

A middleware cannot do it: Litestar 2 routes a request before any middleware runs
(middleware wraps each route's handler), and a method the path has no handler for is
refused right there, so a middleware never sees a HEAD request. `answer_head_as_get`
wraps the app's whole handler instead (`Litestar.asgi_handler`, as the access log does:
app/observability/plugin.py): a HEAD request is served as the GET of its path with the
body dropped, so it answers the GET's status and headers (`Content-Length`, `ETag`, …
included: RFC 9110, 9.3.2). A path without GET answers HEAD as it answers GET: 405 with
the path's `Allow`. Inside the wrapper the request is a GET (route middleware, metrics);
the access log, wrapped around it at startup, records the HEAD.

No route of ours declares HEAD (tests/api/test_request_forms.py checks it), so none is
shadowed. tests/test_upstream_workarounds.py fails once Litestar answers HEAD by itself:
then drop this module and its call in app/asgi.py.
"""

from __future__ import annotations

from litestar import Litestar
from litestar.enums import ScopeType
from litestar.types import ASGIApp, Message, Receive, Scope, Send


def _without_body(send: Send) -> Send:
    """`send` for a HEAD answer: the GET's status and headers, each body part emptied."""

    async def send_head(message: Message) -> None:
        if message["type"] == "http.response.body":
            more = message.get("more_body", False)
            message = {"type": "http.response.body", "body": b"", "more_body": more}
        await send(message)

    return send_head


class HeadAsGet:
    """An ASGI app serving HEAD as the GET of `app` without its body."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == ScopeType.HTTP and scope["method"] == "HEAD":
            as_get: Scope = {**scope, "method": "GET"}  # type: ignore[typeddict-item]
            await self.app(as_get, receive, _without_body(send))
            return
        await self.app(scope, receive, send)


def answer_head_as_get(app: Litestar) -> Litestar:
    """`app`, answering HEAD on every GET route (see the module's docstring)."""
    if not isinstance(app.asgi_handler, HeadAsGet):
        app.asgi_handler = HeadAsGet(app.asgi_handler)
    return app
