"""POST/GET/DELETE /api/devices: idempotent by token, tokens move with the login, owners only."""

from __future__ import annotations

import secrets

import httpx
from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from app.db.models import Device
from app.devices.repository import MAX_DEVICES_PER_USER
from tests.conftest import ApiUser

BUNDLE = "com.example.toolcells"


def _body(token: str | None = None, **fields: object) -> dict:
    return {
        "token": token or secrets.token_hex(32),
        "environment": "sandbox",
        "bundle_id": BUNDLE,
        **fields,
    }


async def test_register_is_idempotent_by_token(
    client: httpx.AsyncClient, alice: ApiUser, db: AsyncSession
) -> None:
    body = _body(locale="fr_FR")
    first = await client.post("/api/devices", json=body, headers=alice.headers)
    assert first.status_code == 201, first.text
    device = first.json()
    assert device["platform"] == "ios" and device["locale"] == "fr_FR"
    assert "token" not in device  # a credential to reach the phone: never served back
    again = await client.post(
        "/api/devices",
        json=body | {"environment": "production", "token": body["token"].upper()},
        headers=alice.headers,
    )
    assert again.status_code == 201
    assert again.json()["id"] == device["id"] and again.json()["environment"] == "production"
    listed = await client.get("/api/devices", headers=alice.headers)
    assert [d["id"] for d in listed.json()["items"]] == [device["id"]]


async def test_a_token_registered_by_another_user_moves(
    client: httpx.AsyncClient, alice: ApiUser, bob: ApiUser, db: AsyncSession
) -> None:
    body = _body()
    mine = (await client.post("/api/devices", json=body, headers=alice.headers)).json()
    moved = await client.post("/api/devices", json=body, headers=bob.headers)
    assert moved.status_code == 201 and moved.json()["id"] == mine["id"]
    assert (await client.get("/api/devices", headers=alice.headers)).json()["items"] == []
    assert len((await client.get("/api/devices", headers=bob.headers)).json()["items"]) == 1
    count = await db.scalar(select(func.count()).select_from(Device))
    assert count == 1


async def test_delete_only_your_own(
    client: httpx.AsyncClient, alice: ApiUser, bob: ApiUser
) -> None:
    device = (await client.post("/api/devices", json=_body(), headers=alice.headers)).json()
    url = f"/api/devices/{device['id']}"
    assert (await client.delete(url, headers=bob.headers)).status_code == 404
    assert (await client.delete(url, headers=alice.headers)).status_code == 204
    assert (await client.delete(url, headers=alice.headers)).status_code == 404
    assert (await client.get("/api/devices", headers=alice.headers)).json()["items"] == []


async def test_bad_registrations_are_400s(client: httpx.AsyncClient, alice: ApiUser) -> None:
    for bad in (
        _body(token="not-hex"),
        _body(environment="staging"),
        _body(platform="android"),
        _body(bundle_id="has spaces"),
        _body(locale="x" * 50),
        _body(extra=1),
    ):
        response = await client.post("/api/devices", json=bad, headers=alice.headers)
        assert response.status_code == 400, (bad, response.text)
    assert (await client.post("/api/devices", json=_body())).status_code == 401


async def test_a_user_keeps_at_most_the_newest_devices(
    client: httpx.AsyncClient, alice: ApiUser
) -> None:
    ids = []
    for _ in range(MAX_DEVICES_PER_USER + 2):
        response = await client.post("/api/devices", json=_body(), headers=alice.headers)
        ids.append(response.json()["id"])
    listed = [
        d["id"] for d in (await client.get("/api/devices", headers=alice.headers)).json()["items"]
    ]
    assert len(listed) == MAX_DEVICES_PER_USER
    assert set(listed) == set(ids[-MAX_DEVICES_PER_USER:])
