from __future__ import annotations

from httpx import AsyncClient
from sqlalchemy.ext.asyncio import AsyncSession

from tests.conftest import ApiUser
from tests.factories import TEST_PASSWORD, UserFactory


async def test_health_reports_database(client: AsyncClient) -> None:
    response = await client.get("/api/health")
    assert response.status_code == 200
    assert response.json() == {"status": "ok", "database": "ok"}


async def test_token_login_me_and_revoke(client: AsyncClient, db: AsyncSession) -> None:
    user = UserFactory.build(email="Person@Example.com".lower())
    db.add(user)
    await db.commit()

    response = await client.post(
        "/api/auth/token", json={"email": "person@example.com", "password": TEST_PASSWORD}
    )
    assert response.status_code == 201
    body = response.json()
    assert body["token_type"] == "bearer"
    assert body["user"]["email"] == "person@example.com"
    headers = {"Authorization": f"Bearer {body['access_token']}"}

    me = await client.get("/api/me", headers=headers)
    assert me.status_code == 200 and me.json()["id"] == str(user.id)

    assert (await client.delete("/api/auth/token", headers=headers)).status_code == 204
    again = await client.get("/api/me", headers=headers)
    assert again.status_code == 401
    assert again.headers["content-type"].startswith("application/problem+json")


async def test_wrong_password_is_401_problem(client: AsyncClient, alice: ApiUser) -> None:
    response = await client.post(
        "/api/auth/token", json={"email": alice.user.email, "password": "nope"}
    )
    assert response.status_code == 401
    body = response.json()
    assert body["status"] == 401 and body["title"] == "Unauthorized"


async def test_missing_and_garbage_tokens_are_401(client: AsyncClient) -> None:
    assert (await client.get("/api/me")).status_code == 401
    garbage = await client.get("/api/me", headers={"Authorization": "Bearer nope"})
    assert garbage.status_code == 401


async def test_token_is_stored_hashed(
    client: AsyncClient, db: AsyncSession, alice: ApiUser
) -> None:
    from sqlalchemy import select

    from app.db.models import ApiToken

    hashes = list(await db.scalars(select(ApiToken.token_hash)))
    assert alice.token not in hashes
    assert len(hashes) == 1 and len(hashes[0]) == 64


async def test_malformed_login_body_is_400_with_field_errors(client: AsyncClient) -> None:
    response = await client.post("/api/auth/token", json={"email": 5})
    assert response.status_code == 400
    body = response.json()
    assert body["errors"] and body["errors"][0]["source"] == "body"
