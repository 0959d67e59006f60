"""Shared fixtures for the web tool tests: stub resolver, canaries, a test CA."""

from __future__ import annotations

import contextlib
import dataclasses
import ssl
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import pytest
import trustme

from app.lib.net.fetch import FetchPolicy
from app.tools.builtin.web import WebTool
from tests.tools.http_servers import LocalServer, canary_handler

if TYPE_CHECKING:
    from tests.tools.conftest import ToolHarness


@dataclass
class StubResolver:
    """Answers from a table; a list of answers is consumed one per call (rebinding)."""

    table: dict[str, list[str] | list[list[str]]] = field(default_factory=dict)
    calls: list[str] = field(default_factory=list)

    async def resolve(self, host: str, port: int) -> list[str]:
        self.calls.append(host)
        answer = self.table.get(host)
        if answer is None:
            raise OSError(f"stub: {host} does not resolve")
        if answer and isinstance(answer[0], list):
            return answer.pop(0) if len(answer) > 1 else answer[0]  # type: ignore[return-value]
        return answer  # type: ignore[return-value]


@dataclass
class WebEnv:
    harness: ToolHarness
    resolver: StubResolver
    canaries: list[LocalServer]
    ca: trustme.CA

    @property
    def canary_hits(self) -> int:
        return sum(c.hits for c in self.canaries)

    def allow(self, *hosts: str) -> None:
        settings = self.harness.ctx.settings
        self.harness.ctx.settings = dataclasses.replace(
            settings, web_fetch_allow_hosts=(*settings.web_fetch_allow_hosts, *hosts)
        )

    async def fetch(self, url: str):
        self.harness.new_run()
        return await self.harness.call("web", {"action": "fetch", "url": url})


@pytest.fixture(scope="session")
def test_ca() -> trustme.CA:
    return trustme.CA()


def client_context(ca: trustme.CA) -> ssl.SSLContext:
    context = ssl.create_default_context()
    ca.configure_trust(context)
    return context


def server_context(ca: trustme.CA, *names: str) -> ssl.SSLContext:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert(*names).configure_cert(context)
    return context


async def _start(servers: list[LocalServer], server: LocalServer) -> LocalServer:
    await server.start()
    servers.append(server)
    return server


@pytest.fixture
async def start_server() -> AsyncIterator[Callable[..., object]]:
    servers: list[LocalServer] = []

    async def start(host: str = "127.0.0.1", handler=canary_handler, **kwargs) -> LocalServer:
        return await _start(servers, LocalServer(host, handler, **kwargs))

    yield start
    for server in servers:
        await server.stop()


@pytest.fixture
async def web(harness: ToolHarness, use_tools, start_server, test_ca: trustme.CA) -> WebEnv:
    resolver = StubResolver()
    # Any port, so that only the address checks stand between a URL and the canaries.
    use_tools(
        WebTool(
            resolver=resolver,
            policy=FetchPolicy(allowed_ports=None),
            verify=client_context(test_ca),
        )
    )
    canary = await start_server("127.0.0.1")
    second = await start_server("127.0.0.2", port=canary.port)
    canaries = [canary, second]
    with contextlib.suppress(OSError):  # no IPv6 loopback on this machine
        canaries.append(await start_server("::1", port=canary.port))
    return WebEnv(harness, resolver, canaries, test_ca)
