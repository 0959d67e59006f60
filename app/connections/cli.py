"""`litestar connections rekey`: every stored MCP secret sealed again with the first key of
MCP_TOKEN_KEY (app/connections/vault.py), so the old keys can be dropped.

Safe while the app serves and to run twice: each value is replaced only if it is still the
one read (a token refreshed meanwhile is already sealed with the first key, and kept).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import click
from litestar import Litestar
from sqlalchemy import CursorResult, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from app.connections.vault import Vault, vault_from
from app.db.models import McpConnection, McpOAuthState
from app.lib.cli import app_group, run_in_session, with_app

connections_group = app_group("connections", "Users' connections to per-user MCP servers.")

# Every sealed column: (model, column name).
SEALED_COLUMNS = (
    (McpConnection, "token_ciphertext"),
    (McpConnection, "oauth_ciphertext"),
    (McpOAuthState, "pending_ciphertext"),
)


@dataclass
class Rekeyed:
    resealed: int = 0
    unreadable: int = 0


async def rekey(session: AsyncSession, vault: Vault) -> Rekeyed:
    counts = Rekeyed()
    for model, name in SEALED_COLUMNS:
        column = getattr(model, name)
        rows = (await session.execute(select(model.id, column).where(column.is_not(None)))).all()
        for row_id, sealed in rows:
            fresh = vault.reseal(sealed)
            if fresh is None:
                counts.unreadable += 1
                continue
            changed: CursorResult[Any] = await session.execute(  # type: ignore[assignment]
                update(model)
                .where(model.id == row_id, column == sealed)
                # updated_at kept: it is when the user connected (GET /api/mcp/servers)
                .values({name: fresh, "updated_at": model.updated_at})
                .execution_options(synchronize_session=False)
            )
            counts.resealed += changed.rowcount
    return counts


@connections_group.command(
    name="rekey",
    help="Seal every stored MCP token again with the first key of MCP_TOKEN_KEY "
    "(after a rotation: new key first, old ones after it; then drop the old ones).",
)
@with_app
def rekey_command(app: Litestar) -> None:
    vault = vault_from(app.state.settings.mcp_token_key)
    if not isinstance(vault, Vault):
        raise click.ClickException(vault or "MCP_TOKEN_KEY is not set.")

    async def work(session: AsyncSession) -> Rekeyed:
        return await rekey(session, vault)

    counts = run_in_session(app, work)
    click.echo(
        f"Sealed {counts.resealed} secret(s) again with the first of {vault.key_count} key(s)."
    )
    if counts.unreadable:
        click.echo(
            f"{counts.unreadable} secret(s) open with none of the keys (sealed with a key "
            "no longer given): their users connect those servers again.",
            err=True,
        )
