"""Login throttling (429 + Retry-After per account and per address), the password
policy, and the security headers."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack
from uuid import uuid4

import httpx
import pytest
from httpx import AsyncClient
from litestar.exceptions import ServiceUnavailableException, TooManyRequestsException
from sqlalchemy.ext.asyncio import AsyncSession

from app import create_app
from app.accounts.services import create_user
from app.accounts.throttle import RedisCounter, build_login_throttle
from app.lib.problems import ProblemException
from app.settings import Settings
from tests.api.support import assert_problem
from tests.conftest import ApiUser, running_lifespan
from tests.factories import TEST_PASSWORD

MAX_PER_ACCOUNT, MAX_PER_ADDRESS = 3, 5
REDIS_URL = os.environ.get("TEST_REDIS_URL", "redis://127.0.0.1:6379/0")
ClientFrom = Callable[..., AsyncClient]


PROXY = "10.20.0.0/16"


@pytest.fixture
async def client_from(client: AsyncClient, settings: Settings) -> AsyncIterator[ClientFrom]:
    """Clients of an app with small login limits, each from a client address of its own
    (every test client would otherwise share one address, and one throttle); peers in
    `PROXY` are trusted reverse proxies."""
    app = create_app(
        dataclasses.replace(
            settings,
            login_max_failures_per_account=MAX_PER_ACCOUNT,
            login_max_failures_per_address=MAX_PER_ADDRESS,
            trusted_proxies=(PROXY,),
        )
    )
    async with AsyncExitStack() as stack:
        await stack.enter_async_context(running_lifespan(app))

        def from_address(host: str, forwarded_for: str | None = None) -> AsyncClient:
            transport = httpx.ASGITransport(app=app, client=(host, 50000))
            headers = {"X-Forwarded-For": forwarded_for} if forwarded_for else {}
            return httpx.AsyncClient(
                transport=transport, base_url="http://testserver", headers=headers
            )

        yield from_address


async def _login(client: AsyncClient, email: str, password: str) -> httpx.Response:
    async with client:
        return await client.post("/api/auth/token", json={"email": email, "password": password})


def _assert_throttled(response: httpx.Response) -> None:
    problem = assert_problem(response, 429)
    assert "Too many failed logins" in problem["detail"]
    assert int(response.headers["retry-after"]) > 0


async def test_failed_logins_for_one_account_are_throttled(
    client_from: ClientFrom, alice: ApiUser, bob: ApiUser
) -> None:
    email = alice.user.email
    for i in range(MAX_PER_ACCOUNT):
        assert (await _login(client_from(f"10.0.0.{i}"), email, "wrong")).status_code == 401
    # From yet another address, and even with the right password: refused until the
    # window ends, so guesses spread over many addresses get nowhere.
    _assert_throttled(await _login(client_from("10.0.1.1"), email, TEST_PASSWORD))
    other = await _login(client_from("10.0.1.1"), bob.user.email, TEST_PASSWORD)
    assert other.status_code == 201


async def test_a_successful_login_resets_the_account_count(
    client_from: ClientFrom, alice: ApiUser
) -> None:
    email = alice.user.email
    for _ in range(2):
        for _ in range(MAX_PER_ACCOUNT - 1):
            assert (await _login(client_from("10.0.2.1"), email, "wrong")).status_code == 401
        assert (await _login(client_from("10.0.2.1"), email, TEST_PASSWORD)).status_code == 201


async def test_failed_logins_from_one_address_are_throttled(
    client_from: ClientFrom, alice: ApiUser
) -> None:
    for _ in range(MAX_PER_ADDRESS):
        stranger = f"{uuid4().hex}@example.com"
        assert (await _login(client_from("10.0.3.1"), stranger, "wrong")).status_code == 401
    _assert_throttled(await _login(client_from("10.0.3.1"), alice.user.email, TEST_PASSWORD))
    elsewhere = await _login(client_from("10.0.3.2"), alice.user.email, TEST_PASSWORD)
    assert elsewhere.status_code == 201


async def test_behind_a_trusted_proxy_each_forwarded_client_has_its_own_budget(
    client_from: ClientFrom, alice: ApiUser
) -> None:
    """Every user behind the load balancer comes from its address: the budget follows the
    client the proxy names (the hop nearest us that is not a proxy itself)."""
    guesser = "203.0.113.5"
    for _ in range(MAX_PER_ADDRESS):
        stranger = f"{uuid4().hex}@example.com"
        proxied = client_from("10.20.0.7", f"198.51.100.1, {guesser}, 10.20.0.3")
        assert (await _login(proxied, stranger, "wrong")).status_code == 401
    throttled = client_from("10.20.0.8", f"{guesser}, 10.20.0.9")  # another proxy, same client
    _assert_throttled(await _login(throttled, alice.user.email, TEST_PASSWORD))
    neighbour = client_from("10.20.0.7", "203.0.113.6")
    assert (await _login(neighbour, alice.user.email, TEST_PASSWORD)).status_code == 201


async def test_forwarded_for_from_an_untrusted_peer_is_ignored(
    client_from: ClientFrom, alice: ApiUser
) -> None:
    """A client cannot buy fresh guesses by sending a new `X-Forwarded-For` each time."""
    for i in range(MAX_PER_ADDRESS):
        stranger = f"{uuid4().hex}@example.com"
        forged = client_from("198.51.100.9", f"192.0.2.{i}")
        assert (await _login(forged, stranger, "wrong")).status_code == 401
    again = client_from("198.51.100.9", "192.0.2.200")
    _assert_throttled(await _login(again, alice.user.email, TEST_PASSWORD))


async def test_failures_are_shared_across_processes_through_redis(settings: Settings) -> None:
    """Two throttles on one Redis (two server processes) see each other's failures."""
    prefix = f"test-{uuid4().hex}:"
    shared = dataclasses.replace(
        settings,
        redis_url=REDIS_URL,
        channels_prefix=prefix,
        login_max_failures_per_account=MAX_PER_ACCOUNT,
    )
    one, two = build_login_throttle(shared), build_login_throttle(shared)
    assert isinstance(one.counter, RedisCounter)
    email = f"{uuid4().hex}@example.com"
    try:
        for i in range(MAX_PER_ACCOUNT):
            await (one if i % 2 else two).attempt(email, f"10.0.4.{i}")
        with pytest.raises(TooManyRequestsException) as refused:
            await two.attempt(email, "10.0.4.9")
        assert int(refused.value.headers["Retry-After"]) > 0
    finally:
        async for key in one.counter.redis.scan_iter(match=f"{prefix}*"):
            await one.counter.redis.delete(key)
        await one.counter.close()
        await two.counter.close()


async def test_redis_unavailable_is_a_503_not_a_500(settings: Settings) -> None:
    # Nothing listens on port 1: the shared counts cannot be read.
    down = dataclasses.replace(settings, redis_url="redis://127.0.0.1:1/0")
    throttle = build_login_throttle(down)
    try:
        with pytest.raises(ServiceUnavailableException) as unavailable:
            await throttle.attempt("someone@example.com", "10.0.5.1")
        assert unavailable.value.headers["Retry-After"]
    finally:
        await throttle.counter.close()


async def test_token_responses_are_not_cached_and_nothing_is_sniffed(
    client: AsyncClient, alice: ApiUser
) -> None:
    login = await client.post(
        "/api/auth/token", json={"email": alice.user.email, "password": TEST_PASSWORD}
    )
    assert login.status_code == 201 and login.headers["cache-control"] == "no-store"
    responses = [
        login,
        await client.get("/api/health"),
        await client.get("/api/me", headers=alice.headers),
        await client.get("/api/me"),  # 401
        await client.get("/api/nope"),  # 404 from the router
        await client.post("/api/threads", content=b"[[", headers=alice.headers),  # 400
    ]
    for response in responses:
        assert response.headers["x-content-type-options"] == "nosniff", response.request.url


@pytest.mark.parametrize(
    ("password", "rule"),
    [
        ("short-pw", "at least 10 characters"),
        ("aaaaaaaaaaaaaaa", "not one character repeated"),
        ("Weak@Example.com", "not the email address"),
    ],
)
async def test_weak_passwords_are_refused_naming_the_rule(
    client: AsyncClient, db: AsyncSession, password: str, rule: str
) -> None:
    with pytest.raises(ProblemException) as refused:
        await create_user(db, "weak@example.com", password)
    assert refused.value.status_code == 400
    assert refused.value.detail.startswith("The password is too weak") and rule in (
        refused.value.detail
    )
    assert refused.value.extra["errors"][0]["field"] == "password"
    await db.rollback()
    user = await create_user(db, "strong@example.com", "a fine passphrase")
    assert user.id
