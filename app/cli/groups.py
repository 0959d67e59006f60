"""Plain click groups whose commands receive the app, through Litestar's public CLI hook.

Litestar hands the app to a command added to its root group whose callback asks for
`app: Litestar` (the documented contract of `CLIPluginProtocol.on_cli_init`). A group is
such a command: its callback asks for the app and keeps it in click's `Context.meta`,
which every nested context shares, and `with_app` hands it to the group's own commands.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

import click
from litestar import Litestar

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
