"""mcp oauth

Per-user MCP servers connected through OAuth: the sealed grant and the access token's expiry
on the connection, and the pending authorizations (state digest, sealed PKCE verifier).

Revision ID: 0013_mcp_oauth
Revises: 0011_run_usage
"""

from __future__ import annotations

from collections.abc import Sequence

import advanced_alchemy.types
import sqlalchemy as sa
from alembic import op

revision: str = "0013_mcp_oauth"
down_revision: str | None = "0012_run_lease_epoch"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("mcp_connections") as batch:
        batch.add_column(sa.Column("oauth_ciphertext", sa.Text(), nullable=True))
        batch.add_column(
            sa.Column(
                "expires_at",
                advanced_alchemy.types.datetime.DateTimeUTC(timezone=True),
                nullable=True,
            )
        )
    op.create_table(
        "mcp_oauth_states",
        sa.Column("state_digest", sa.String(length=64), nullable=False),
        sa.Column("user_id", advanced_alchemy.types.guid.GUID(length=16), nullable=False),
        sa.Column("server", sa.String(length=24), nullable=False),
        sa.Column("pending_ciphertext", sa.Text(), nullable=False),
        sa.Column(
            "expires_at", advanced_alchemy.types.datetime.DateTimeUTC(timezone=True), nullable=False
        ),
        sa.Column("id", advanced_alchemy.types.guid.GUID(length=16), nullable=False),
        sa.Column("sa_orm_sentinel", sa.Integer(), nullable=True),
        sa.Column(
            "created_at", advanced_alchemy.types.datetime.DateTimeUTC(timezone=True), nullable=False
        ),
        sa.Column(
            "updated_at", advanced_alchemy.types.datetime.DateTimeUTC(timezone=True), nullable=False
        ),
        sa.ForeignKeyConstraint(
            ["user_id"],
            ["users.id"],
            name=op.f("fk_mcp_oauth_states_user_id_users"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_mcp_oauth_states")),
        sa.UniqueConstraint("state_digest", name=op.f("uq_mcp_oauth_states_state_digest")),
    )


def downgrade() -> None:
    op.drop_table("mcp_oauth_states")
    with op.batch_alter_table("mcp_connections") as batch:
        batch.drop_column("expires_at")
        batch.drop_column("oauth_ciphertext")
