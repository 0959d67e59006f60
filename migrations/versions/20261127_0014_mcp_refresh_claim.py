"""mcp_connections: refresh_claimed_until, one refresh of a grant across processes

A process about to refresh an OAuth connection's access token claims the row until then;
the others wait for the token it stores instead of spending the same (rotated) refresh
token a second time, which the authorization server refuses, or takes for a stolen token
and revokes the whole grant.

Revision ID: 0014_mcp_refresh_claim
Revises: 0013_mcp_oauth
"""

from __future__ import annotations

from collections.abc import Sequence

import advanced_alchemy.types
import sqlalchemy as sa
from alembic import op

revision: str = "0014_mcp_refresh_claim"
down_revision: str | None = "0013_mcp_oauth"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("mcp_connections") as batch:
        batch.add_column(
            sa.Column(
                "refresh_claimed_until",
                advanced_alchemy.types.datetime.DateTimeUTC(timezone=True),
                nullable=True,
            )
        )


def downgrade() -> None:
    with op.batch_alter_table("mcp_connections") as batch:
        batch.drop_column("refresh_claimed_until")
