"""Plain click groups whose commands receive the app, through Litestar's public CLI hook,
and one committed database session for a command's work.

Litestar hands the app to a command added to its root group whose callback asks for
`app: Litestar` (the documented contract of `CLIPluginProtocol.on_cli_init`). A group is
such a command: its callback asks for the app and keeps it in click's `Context.meta`,
which every nested context shares, and `with_app` hands it to the group's own commands.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import anyio
import click
from advanced_alchemy.extensions.litestar import SQLAlchemyPlugin
from litestar import Litestar
from sqlalchemy.ext.asyncio import AsyncSession

T = TypeVar("T")
APP_KEY = "toolcells.app"  # in click's Context.meta, shared by the nested contexts


def app_group(name: str, help: str) -> click.Group:
    """A click group to add to Litestar's root in `on_cli_init`; see `with_app`."""

    def keep_app(app: Litestar) -> None:
        click.get_current_context().meta[APP_KEY] = app

    return click.Group(name=name, help=help, callback=keep_app)


def with_app(command: Callable[..., T]) -> Callable[..., T]:
    """Pass the app the group kept as the command's first argument (`app`)."""

    @functools.wraps(command)
    def with_the_app(*args: Any, **kwargs: Any) -> T:
        return command(click.get_current_context().meta[APP_KEY], *args, **kwargs)

    return with_the_app


def run_in_session(app: Litestar, work: Callable[[AsyncSession], Awaitable[T]]) -> T:
    """Run `work` in one committed session on the app's database."""
    config = app.plugins.get(SQLAlchemyPlugin).config[0]

    async def _main() -> T:
        engine = config.get_engine()
        try:
            async with config.get_session() as session:
                result = await work(session)
                await session.commit()
                return result
        finally:
            await engine.dispose()

    return anyio.run(_main)
