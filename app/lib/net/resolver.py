"""Name resolution for fetches, behind a small protocol so tests can stub it."""

from __future__ import annotations

import asyncio
import socket
from typing import Protocol


class Resolver(Protocol):
    async def resolve(self, host: str, port: int) -> list[str]:
        """Every address of `host` (as strings); raise OSError when it does not resolve."""
        ...


class SystemResolver:
    async def resolve(self, host: str, port: int) -> list[str]:
        infos = await asyncio.get_running_loop().getaddrinfo(
            host, port, type=socket.SOCK_STREAM, proto=socket.IPPROTO_TCP
        )
        return list(dict.fromkeys(str(info[4][0]) for info in infos))
