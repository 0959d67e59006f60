"""The per-process cache of bearer tokens' users never outlives a revocation."""

from __future__ import annotations

from datetime import timedelta
from uuid import uuid4

from httpx import AsyncClient

from app.accounts.token_cache import TokenCache
from app.db.models import User
from app.lib.time import utcnow
from tests.api.support import assert_problem
from tests.conftest import ApiUser


async def test_a_token_revoked_through_the_api_is_refused_at_once_though_cached(
    client: AsyncClient, alice: ApiUser
) -> None:
    for _ in range(2):  # the second request is served from the cache
        assert (await client.get("/api/me", headers=alice.headers)).status_code == 200
    assert (await client.delete("/api/auth/token", headers=alice.headers)).status_code == 204
    assert_problem(await client.get("/api/me", headers=alice.headers), 401)


def _user() -> User:
    now = utcnow()
    return User(
        id=uuid4(), email="a@example.com", password_hash="x", created_at=now, updated_at=now
    )


def test_each_hit_is_a_user_of_its_own() -> None:
    cache = TokenCache(60)
    cache.put("d", _user(), utcnow() + timedelta(days=1))
    first, second = cache.get("d"), cache.get("d")
    assert first is not None and second is not None and first is not second
    assert first.email == "a@example.com"


def test_a_forgotten_token_is_not_cached_again_and_expired_ones_never() -> None:
    cache = TokenCache(60)
    cache.put("d", _user(), utcnow() + timedelta(days=1))
    cache.forget("d")
    assert cache.get("d") is None
    cache.put("d", _user(), utcnow() + timedelta(days=1))  # a lookup racing the revocation
    assert cache.get("d") is None
    cache.put("e", _user(), utcnow() - timedelta(seconds=1))
    assert cache.get("e") is None
    off = TokenCache(0)
    off.put("f", _user(), utcnow() + timedelta(days=1))
    assert off.get("f") is None
