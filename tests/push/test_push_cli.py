"""`litestar push test --email E` sends a test notification to the user's devices."""

from __future__ import annotations

import asyncio
import os
import secrets
import sys

import httpx

from app.settings import PROJECT_ROOT
from tests.conftest import ApiUser
from tests.push.conftest import BUNDLE
from tests.support.fake_apns import FakeApns


async def _litestar(env: dict[str, str], *args: str) -> tuple[int, str]:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "litestar",
        *args,
        cwd=PROJECT_ROOT,
        env={**os.environ, **env},
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    output, _ = await asyncio.wait_for(process.communicate(), 180)
    return process.returncode or 0, output.decode()


async def test_push_test_reaches_every_device(
    client: httpx.AsyncClient, alice: ApiUser, fake_apns: FakeApns, database_url: str
) -> None:
    fake_apns.clear()
    token = secrets.token_hex(32)
    body = {"token": token, "environment": "production", "bundle_id": BUNDLE}
    assert (await client.post("/api/devices", json=body, headers=alice.headers)).status_code == 201
    env = {
        "DATABASE_URL": database_url,
        "RUNNER_ENABLED": "0",
        "APNS_KEY_FILE": fake_apns.key_file,
        "APNS_KEY_ID": fake_apns.key_id,
        "APNS_TEAM_ID": fake_apns.team_id,
        "APNS_TOPIC": BUNDLE,
        "APNS_BASE_URL": fake_apns.base_url,
        "APNS_CA_FILE": fake_apns.ca_file,
    }
    code, output = await _litestar(env, "push", "test", "--email", alice.user.email)
    assert code == 0, output
    assert ": sent" in output
    (push,) = fake_apns.to(token)
    assert push.payload["kind"] == "test" and push.headers["apns-topic"] == BUNDLE

    code, output = await _litestar({**env, "APNS_KEY_FILE": ""}, "push", "test", "--email", "x@y")
    assert code != 0 and "Push is off" in output
