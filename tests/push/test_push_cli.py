"""`litestar push test --email E` sends a test notification to the user's devices."""

from __future__ import annotations

import asyncio
import secrets

import httpx

from tests.conftest import ApiUser
from tests.push.conftest import BUNDLE
from tests.support.cli import litestar
from tests.support.fake_apns import FakeApns


async def test_push_test_reaches_every_device(
    client: httpx.AsyncClient, alice: ApiUser, fake_apns: FakeApns, database_url: str
) -> None:
    fake_apns.clear()
    token = secrets.token_hex(32)
    body = {"token": token, "environment": "production", "bundle_id": BUNDLE}
    assert (await client.post("/api/devices", json=body, headers=alice.headers)).status_code == 201
    env = {
        "APNS_KEY_FILE": fake_apns.key_file,
        "APNS_KEY_ID": fake_apns.key_id,
        "APNS_TEAM_ID": fake_apns.team_id,
        "APNS_TOPIC": BUNDLE,
        "APNS_BASE_URL": fake_apns.base_url,
        "APNS_CA_FILE": fake_apns.ca_file,
    }
    sent = await asyncio.to_thread(
        litestar, database_url, "push", "test", "--email", alice.user.email, env=env
    )
    assert sent.exit_code == 0, (sent.output, sent.exception)
    assert ": sent" in sent.output
    (push,) = fake_apns.to(token)
    assert push.payload["kind"] == "test" and push.headers["apns-topic"] == BUNDLE

    off = await asyncio.to_thread(
        litestar, database_url, "push", "test", "--email", "x@y", env={**env, "APNS_KEY_FILE": ""}
    )
    assert off.exit_code != 0 and "Push is off" in off.output
