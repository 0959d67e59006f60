"""`litestar tools list` and `litestar tools consolidate [--dry-run] [--reverse]`."""

from __future__ import annotations

import click
from litestar import Litestar

from app.lib.cli import app_group, run_in_session, with_app

tools_group = app_group("tools", "Inspect tools and migrate agents' tools.")


@tools_group.command(name="list", help="Tools, their actions and the agent types offering them.")
def list_tools_command() -> None:
    from app.tools.assembly import get_registry
    from app.tools.runtime.toolsets import agent_types_offering

    for tool in get_registry().catalog():
        types = ", ".join(agent_types_offering(tool.name)) or "(no agent type)"
        flags = []
        if not tool.is_user_facing:
            flags.append("not user-facing")
        if tool.non_user_facing_actions:
            flags.append("no cell for " + ", ".join(tool.non_user_facing_actions))
        if tool.confirmation_actions:
            flags.append("asks before " + ", ".join(tool.confirmation_actions))
        suffix = f"  [{'; '.join(flags)}]" if flags else ""
        click.echo(f"{tool.name}: {', '.join(tool.actions)}{suffix}")
        click.echo(f"    agent types: {types}")
    click.echo(NOT_LISTED)


# Tools known only while the server runs or per user: this command starts neither.
NOT_LISTED = (
    "Not listed here: MCP tools, registered when the running server connects to its MCP "
    "servers or a user connects one, and ask_<name> tools, one per enabled specialist "
    "agent of a user. GET /api/tools lists both for the signed-in user."
)


@tools_group.command(
    name="consolidate",
    help="Rewrite agents' enabled_tools from legacy one-action names to domain tools "
    "(or back with --reverse). Idempotent; prints what changed.",
)
@click.option("--dry-run", is_flag=True, default=False, help="Show the changes, write nothing.")
@click.option(
    "--reverse",
    is_flag=True,
    default=False,
    help="Domain tools back to legacy names (for a rollback); effective tools stay the same.",
)
@with_app
def consolidate_command(app: Litestar, dry_run: bool, reverse: bool) -> None:
    from app.tools.runtime.consolidate import rewrite_enabled_tools

    changes = run_in_session(
        app, lambda session: rewrite_enabled_tools(session, reverse=reverse, dry_run=dry_run)
    )
    for change in changes:
        click.echo(f"{change.agent_id} {change.agent_name}: {change.before} -> {change.after}")
        if change.unknown:
            click.echo(f"    kept unknown tool name(s): {', '.join(change.unknown)}")
    direction = "legacy names" if reverse else "domain tools"
    verb = "would change" if dry_run else "changed"
    click.echo(f"{len(changes)} agent(s) {verb} to {direction}.")
