"""`litestar database upgrade` under the migration lock (app/db/schema.py).

The command is advanced-alchemy's; every replica's entrypoint runs it at start, so replicas
starting together would race to create the same tables (the loser's start fails). The
command keeps its options and output, and runs holding the lock: the replicas take turns,
and those after the first find the schema at head. `--sql` (offline: SQL printed, no
database touched) takes no lock.
"""

from __future__ import annotations

from typing import Any

import anyio
import click

from app.db.schema import run_locked


class LockedUpgrade(click.Command):
    """advanced-alchemy's `upgrade`, its callback run under the migration lock."""

    def __init__(self, upgrade: click.Command) -> None:
        super().__init__(
            name=upgrade.name,
            params=list(upgrade.params),
            help=f"{upgrade.help} Holds a database lock meanwhile: replicas take turns.",
            callback=self._run,
        )
        self.upgrade = upgrade

    def _run(self, **options: Any) -> None:
        assert self.upgrade.callback is not None
        if options.get("sql"):
            self.upgrade.callback(**options)
            return
        if not options.get("no_prompt"):  # asked before the lock: replicas never wait on it
            revision = options.get("revision", "head")
            click.confirm(f"Migrate the database to the `{revision}` revision?", abort=True)
            options["no_prompt"] = True
        context = click.get_current_context()

        def upgrade() -> None:  # in a worker thread: click's context is per thread
            with context.scope(cleanup=False):
                assert self.upgrade.callback is not None
                self.upgrade.callback(**options)

        anyio.run(run_locked, _database_url(context, options.get("bind_key")), upgrade)


def _database_url(context: click.Context, bind_key: str | None) -> str:
    """The URL of the config `--bind-key` names (the database group keeps them)."""
    configs = context.obj["configs"]
    config = next((c for c in configs if bind_key is None or c.bind_key == bind_key), None)
    if config is None:
        raise click.ClickException(f"No database config for bind key {bind_key!r}.")
    return config.get_engine().url.render_as_string(hide_password=False)


def lock_database_upgrade() -> None:
    """Put the locked `upgrade` in advanced-alchemy's `database` group: a module-level
    object its plugin adds to the CLI (after ours: that plugin is added by
    `SQLAlchemyPlugin` as the app is built), shared by every app of the process; once."""
    from advanced_alchemy.extensions.litestar.cli import database_group

    upgrade = database_group.commands.get("upgrade")
    if upgrade is not None and not isinstance(upgrade, LockedUpgrade):
        database_group.add_command(LockedUpgrade(upgrade), name="upgrade")
