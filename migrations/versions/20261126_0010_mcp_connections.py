"""mcp connections

Users' own connections to per-user MCP servers (the token encrypted with MCP_TOKEN_KEY).

Revision ID: 0010_mcp_connections
Revises: 0009_live_activity_management
"""

from __future__ import annotations

from collections.abc import Sequence

import advanced_alchemy.types
import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0010_mcp_connections"
down_revision: str | None = "0009_live_activity_management"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "mcp_connections",
        sa.Column("user_id", advanced_alchemy.types.guid.GUID(length=16), nullable=False),
        sa.Column("server", sa.String(length=24), nullable=False),
        sa.Column("token_ciphertext", sa.Text(), nullable=False),
        sa.Column(
            "tools",
            sa.JSON()
            .with_variant(postgresql.JSONB(astext_type=sa.Text()), "cockroachdb")
            .with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
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
            name=op.f("fk_mcp_connections_user_id_users"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_mcp_connections")),
    )
    with op.batch_alter_table("mcp_connections", schema=None) as batch_op:
        batch_op.create_index("uq_mcp_connections_user_server", ["user_id", "server"], unique=True)


def downgrade() -> None:
    with op.batch_alter_table("mcp_connections", schema=None) as batch_op:
        batch_op.drop_index("uq_mcp_connections_user_server")
    op.drop_table("mcp_connections")
