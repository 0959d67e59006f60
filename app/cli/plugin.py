"""Staff CLI groups, added to `litestar` through the CLI plugin protocol."""

from __future__ import annotations

from click import Group
from litestar.plugins import CLIPluginProtocol


class CLIPlugin(CLIPluginProtocol):
    def on_cli_init(self, cli: Group) -> None:
        from app.cli.commands import agents_group, seed_group, tokens_group, users_group
        from app.cli.migrations import lock_database_upgrade

        # Litestar's server-side `sessions` group: this app keeps no server-side sessions.
        cli.commands.pop("sessions", None)
        # advanced-alchemy's `database upgrade`: replicas starting together take turns.
        lock_database_upgrade()
        cli.add_command(users_group)
        cli.add_command(tokens_group)
        cli.add_command(agents_group)
        cli.add_command(seed_group)

        from app.tools.cli import tools_group

        cli.add_command(tools_group)

        from app.push.cli import push_group

        cli.add_command(push_group)

        from app.connections.cli import connections_group

        cli.add_command(connections_group)

        from app.cli.memories import memories_group

        cli.add_command(memories_group)
        from app.attachments.cli import attachments_group

        cli.add_command(attachments_group)
