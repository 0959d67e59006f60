"""Fetch one page safely: vet the URL, resolve once, connect to the vetted address.

The request goes to the checked IP itself (the URL's host is replaced by it) with the
original Host header and, for https, the original name as SNI and for certificate
checks. Nothing re-resolves the name later, so DNS rebinding cannot switch the address
between check and connect. Redirects are followed by hand, each hop vetted the same way.
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

import httpx

from app.lib.net.resolver import Resolver, SystemResolver
from app.lib.net.ssrf import (
    DEFAULT_ALLOWED_PORTS,
    FetchBlocked,
    IPAddress,
    Target,
    check_resolved,
    check_url,
)

REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
# on_bytes(received so far, declared length or None): called as the body arrives.
BytesReceived = Callable[[int, int | None], Awaitable[None]]
USER_AGENT = "ToolcellsBot/1.0 (+web tool)"


class FetchFailed(Exception):
    """The page could not be fetched for an ordinary reason (-> user_error)."""

    error_type = "user_error"


class FetchTimedOut(FetchFailed):
    """The site did not answer in time: a timeout the model may retry, not a user error."""

    error_type = "timeout"


@dataclass(frozen=True)
class FetchPolicy:
    allow_hosts: frozenset[str] = frozenset()
    allowed_ports: frozenset[int] | None = DEFAULT_ALLOWED_PORTS  # None: any port
    max_redirects: int = 5
    max_bytes: int = 2_000_000
    connect_timeout: float = 5.0
    read_timeout: float = 10.0
    total_timeout: float = 20.0


@dataclass(frozen=True)
class Outgoing:
    """What a request sends beyond the vetted URL: GET by default (a page)."""

    method: str = "GET"
    form: dict[str, str] | None = None
    content: bytes | None = None  # a body of its own (JSON), with its Content-Type header
    headers: dict[str, str] = field(default_factory=dict)
    errors_ok: bool = False  # an HTTP error status is returned, not raised


@dataclass
class RawPage:
    url: str
    status: int
    content_type: str
    body: bytes
    encoding: str | None
    truncated: bool
    redirects: list[str] = field(default_factory=list)
    challenge: str | None = None  # WWW-Authenticate of a 401/403 (an MCP server's OAuth hints)


class SafeFetcher:
    def __init__(
        self,
        policy: FetchPolicy,
        resolver: Resolver | None = None,
        verify: ssl.SSLContext | bool = True,
        on_bytes: BytesReceived | None = None,
    ) -> None:
        self.policy = policy
        self.resolver = resolver or SystemResolver()
        self.verify = verify
        self.on_bytes = on_bytes

    async def fetch(self, raw_url: str, headers: dict[str, str] | None = None) -> RawPage:
        """Raises FetchBlocked (security), FetchFailed (user) or ValueError (bad URL)."""
        try:
            async with asyncio.timeout(self.policy.total_timeout):
                return await self._follow(raw_url, Outgoing(headers=headers or {}))
        except TimeoutError:
            raise FetchTimedOut(
                f"The page did not load within {self.policy.total_timeout:g} seconds."
            ) from None

    async def _follow(self, raw_url: str, request: Outgoing) -> RawPage:
        timeout = httpx.Timeout(self.policy.read_timeout, connect=self.policy.connect_timeout)
        # Own client: no proxies from the environment, no automatic redirects.
        async with httpx.AsyncClient(
            trust_env=False, verify=self.verify, timeout=timeout, follow_redirects=False
        ) as client:
            redirects: list[str] = []
            url = raw_url
            while True:
                target = check_url(url, self.policy.allow_hosts, self.policy.allowed_ports)
                address = await self._address(target)
                page = await self._send(client, target, address, request)
                if isinstance(page, RawPage):
                    page.redirects = redirects
                    return page
                if len(redirects) >= self.policy.max_redirects:
                    raise FetchFailed(
                        f"Too many redirects (more than {self.policy.max_redirects})."
                    )
                url = str(target.url.join(page))
                redirects.append(url)

    async def _address(self, target: Target) -> IPAddress:
        if target.literal_ip is not None:
            return target.literal_ip
        try:
            addresses = await self.resolver.resolve(target.host, target.port)
        except (OSError, UnicodeError):
            raise FetchFailed(f"Could not resolve {target.host}.") from None
        try:
            return check_resolved(target, addresses)
        except ValueError as exc:
            raise FetchFailed(str(exc)) from None

    async def post(
        self,
        raw_url: str,
        form: dict[str, str] | None = None,
        headers: dict[str, str] | None = None,
        content: bytes | None = None,
    ) -> RawPage:
        """A POST to a vetted URL (an OAuth token endpoint: a form; a registration: JSON
        `content`): never redirected, and an error status is returned (its body says
        why), not raised."""
        try:
            async with asyncio.timeout(self.policy.total_timeout):
                timeout = httpx.Timeout(
                    self.policy.read_timeout, connect=self.policy.connect_timeout
                )
                async with httpx.AsyncClient(
                    trust_env=False, verify=self.verify, timeout=timeout, follow_redirects=False
                ) as client:
                    target = check_url(raw_url, self.policy.allow_hosts, self.policy.allowed_ports)
                    address = await self._address(target)
                    request = Outgoing("POST", form, content, headers or {}, errors_ok=True)
                    page = await self._send(client, target, address, request)
        except TimeoutError:
            raise FetchTimedOut(
                f"No answer within {self.policy.total_timeout:g} seconds."
            ) from None
        if isinstance(page, str):
            raise FetchFailed("The endpoint answered with a redirect.")
        return page

    async def _send(
        self,
        client: httpx.AsyncClient,
        target: Target,
        address: IPAddress,
        request: Outgoing | None = None,
    ) -> RawPage | str:
        """The page, or the Location of a redirect."""
        request = request or Outgoing()
        host_header = target.url.netloc.decode("ascii").rsplit("@", 1)[-1]
        connect_host = str(address)
        url = target.url.copy_with(host=connect_host)
        extensions = {}
        if target.url.scheme == "https" and target.literal_ip is None:
            extensions["sni_hostname"] = target.host
        headers = {
            "Host": host_header,
            "User-Agent": USER_AGENT,
            "Accept": "text/html,text/*;q=0.9,*/*;q=0.5",
            **request.headers,
        }
        try:
            async with client.stream(
                request.method,
                url,
                headers=headers,
                extensions=extensions,
                data=request.form,
                content=request.content,
            ) as response:
                if response.status_code in REDIRECT_STATUSES:
                    location = response.headers.get("location")
                    if not location:
                        raise FetchFailed(f"HTTP {response.status_code} without a Location.")
                    return location
                if response.status_code >= 400 and not request.errors_ok:
                    raise FetchFailed(f"HTTP {response.status_code} from {target.host}.")
                body, truncated = await self._read_capped(response)
                return RawPage(
                    url=str(target.url),
                    status=response.status_code,
                    content_type=response.headers.get("content-type", ""),
                    body=body,
                    encoding=response.charset_encoding,
                    truncated=truncated,
                    challenge=response.headers.get("www-authenticate"),
                )
        except httpx.TimeoutException:
            raise FetchTimedOut(f"{target.host} took too long to answer.") from None
        except httpx.HTTPError as exc:
            raise FetchFailed(
                f"Could not fetch from {target.host} ({type(exc).__name__})."
            ) from None

    async def _read_capped(self, response: httpx.Response) -> tuple[bytes, bool]:
        limit = self.policy.max_bytes
        declared = response.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > limit * 10:
            raise FetchFailed(f"The page is too large ({int(declared)} bytes).")
        chunks: list[bytes] = []
        size = 0
        total = int(declared) if declared.isdigit() else None
        async for chunk in response.aiter_bytes():
            chunks.append(chunk)
            size += len(chunk)
            if self.on_bytes is not None:
                await self.on_bytes(min(size, limit), total)
            if size >= limit:
                return b"".join(chunks)[:limit], True
        return b"".join(chunks), False


__all__ = (
    "FetchBlocked",
    "FetchFailed",
    "FetchPolicy",
    "FetchTimedOut",
    "RawPage",
    "SafeFetcher",
)
