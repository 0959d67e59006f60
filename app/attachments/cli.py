"""`litestar attachments orphans [--delete]`: stored objects without an attachment row."""

from __future__ import annotations

import anyio
import click
from advanced_alchemy.extensions.litestar import SQLAlchemyPlugin
from litestar import Litestar
from sqlalchemy.ext.asyncio import async_sessionmaker

from app.lib.cli import app_group, with_app

attachments_group = app_group("attachments", "Stored attachments.")


@attachments_group.command(name="orphans", help="List (or delete) objects no attachment owns.")
@click.option("--delete", "remove", is_flag=True, help="Delete them too.")
@with_app
def orphans_command(app: Litestar, remove: bool) -> None:
    for line in anyio.run(_orphans, app, remove):
        click.echo(line)


async def _orphans(app: Litestar, remove: bool) -> list[str]:
    from app.attachments.lifecycle import orphans
    from app.attachments.services import delete_objects

    engine = app.plugins.get(SQLAlchemyPlugin).config[0].get_engine()
    sessions = async_sessionmaker(engine, expire_on_commit=False)
    storage = app.state.attachment_storage
    found = await orphans(sessions, storage)
    if remove:
        await delete_objects(storage, found)
    verb = "deleted" if remove else "orphan"
    return [f"{verb} {attachment_id}" for attachment_id in found] + [
        f"{len(found)} orphaned attachment(s)" + (" deleted" if remove else "")
    ]
