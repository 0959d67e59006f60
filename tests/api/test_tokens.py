from __future__ import annotations

from datetime import timedelta

from httpx import AsyncClient
from sqlalchemy.ext.asyncio import AsyncSession

from app.lib.security import new_token, token_digest
from app.lib.time import utcnow
from tests.api.support import assert_problem
from tests.conftest import ApiUser
from tests.factories import ApiTokenFactory


async def _token(db: AsyncSession, user: ApiUser, **fields: object) -> dict[str, str]:
    raw = new_token()
    db.add(ApiTokenFactory.build(user_id=user.user.id, token_hash=token_digest(raw), **fields))
    await db.commit()
    return {"Authorization": f"Bearer {raw}"}


async def test_expired_and_revoked_tokens_are_401(
    client: AsyncClient, db: AsyncSession, alice: ApiUser
) -> None:
    expired = await _token(db, alice, expires_at=utcnow() - timedelta(seconds=1))
    revoked = await _token(db, alice, revoked_at=utcnow())
    live = await _token(db, alice)
    for headers in (expired, revoked):
        response = await client.get("/api/me", headers=headers)
        assert_problem(response, 401)
        assert response.headers["www-authenticate"] == "Bearer"
    me = await client.get("/api/me", headers=live)
    assert me.status_code == 200 and me.json()["id"] == str(alice.user.id)


async def test_malformed_authorization_headers_are_401(client: AsyncClient) -> None:
    for value in ("Bearer", "Basic abc", "Bearer " + "x" * 500, "bearer  "):
        assert_problem(await client.get("/api/me", headers={"Authorization": value}), 401)
