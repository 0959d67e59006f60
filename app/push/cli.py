"""`litestar push test --email E`: a test notification to every device of a user."""

from __future__ import annotations

import anyio
import click
from advanced_alchemy.extensions.litestar import SQLAlchemyPlugin
from litestar import Litestar
from sqlalchemy import select
from sqlalchemy.ext.asyncio import async_sessionmaker
from uuid_utils.compat import uuid7

from app.lib.cli import app_group, with_app

push_group = app_group("push", "Push notifications.")


@push_group.command(name="test", help="Send a test notification to a user's devices.")
@click.option("--email", required=True)
@with_app
def push_test_command(app: Litestar, email: str) -> None:
    settings = app.state.settings
    if not settings.push_enabled:
        raise click.ClickException(
            "Push is off: set APNS_KEY_FILE, APNS_KEY_ID, APNS_TEAM_ID and APNS_TOPIC."
        )
    lines = anyio.run(_send_test, app, email)
    for line in lines:
        click.echo(line)


async def _send_test(app: Litestar, email: str) -> list[str]:
    from app.accounts.services import get_user_by_email
    from app.db.models import PushDelivery, PushEvent
    from app.push.apns import ApnsClient
    from app.push.sender import PushSender

    settings = app.state.settings
    engine = app.plugins.get(SQLAlchemyPlugin).config[0].get_engine()
    sessions = async_sessionmaker(engine, expire_on_commit=False)
    client = ApnsClient(settings)
    try:
        key = f"test:{uuid7()}"
        async with sessions() as session:
            user = await get_user_by_email(session, email)
            if user is None:
                raise click.ClickException(f"No user with email {email}.")
            session.add(PushEvent(kind="test", event_key=key, user_id=user.id))
            await session.commit()
        sender = PushSender(
            settings, sessions, client, postgres=engine.dialect.name == "postgresql"
        )
        while await sender.cycle():
            pass
        async with sessions() as session:
            rows = (
                await session.scalars(select(PushDelivery).where(PushDelivery.event_key == key))
            ).all()
        if not rows:
            return [f"{email} has no registered devices."]
        return [
            f"device {row.device_id}: {row.status}"
            + (f" ({row.last_error})" if row.last_error else "")
            for row in rows
        ]
    finally:
        await client.aclose()
        await engine.dispose()
