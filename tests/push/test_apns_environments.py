"""Sandbox and production tokens go to their own APNs endpoints (APNS_SANDBOX_BASE_URL,
APNS_PRODUCTION_BASE_URL), so both routes are testable; APNS_BASE_URL sends all to one."""

from __future__ import annotations

import dataclasses
import secrets
from pathlib import Path

from app.push.apns import ApnsClient, Notification
from app.settings import Settings
from tests.push.conftest import BUNDLE
from tests.support.fake_apns import FakeApns


def _alert(token: str, environment: str) -> Notification:
    return Notification(
        token=token,
        environment=environment,
        topic=BUNDLE,
        push_type="alert",
        priority=10,
        expiration=0,
        collapse_id=None,
        payload={"aps": {"alert": {"title": "Research", "body": "Done."}}},
    )


def _ca_bundle(path: Path, *files: str) -> Path:
    """One file trusting both fake servers' CAs (the client takes one APNS_CA_FILE)."""
    path.write_text("".join(Path(file).read_text() for file in files))
    return path


async def test_each_token_goes_to_its_environments_endpoint(tmp_path: Path) -> None:
    (tmp_path / "sandbox").mkdir()
    (tmp_path / "production").mkdir()
    async with (
        FakeApns(tmp_path / "sandbox") as sandbox,
        FakeApns(tmp_path / "production") as production,
    ):
        production.public_key = sandbox.public_key  # one provider key, as with Apple
        both = _ca_bundle(tmp_path / "both-ca.pem", sandbox.ca_file, production.ca_file)
        settings = Settings(
            apns_key_file=sandbox.key_file,
            apns_key_id=sandbox.key_id,
            apns_team_id=sandbox.team_id,
            apns_topic=BUNDLE,
            apns_ca_file=str(both),
            apns_sandbox_base_url=sandbox.base_url,
            apns_production_base_url=production.base_url,
        )
        debug, release = secrets.token_hex(32), secrets.token_hex(32)
        client = ApnsClient(settings)
        try:
            assert (await client.send(_alert(debug, "sandbox"))).reason is None
            assert (await client.send(_alert(release, "production"))).reason is None
        finally:
            await client.aclose()
        assert [r.token for r in sandbox.received] == [debug]
        assert [r.token for r in production.received] == [release]

        one = ApnsClient(dataclasses.replace(settings, apns_base_url=production.base_url))
        try:
            await one.send(_alert(debug, "sandbox"))
        finally:
            await one.aclose()
        assert [r.token for r in production.received] == [release, debug]
