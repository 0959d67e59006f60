"""memory_vectors: one embedding per memory, for recall by meaning

Vectors as float32 blobs, scanned per user with numpy on both dialects (pgvector is not
on every server; a user's few thousand vectors scan in milliseconds: docs/memory.md).

Revision ID: 0016_memory_vectors
Revises: 0014_mcp_refresh_claim
"""

from __future__ import annotations

from collections.abc import Sequence

import advanced_alchemy.types
import sqlalchemy as sa
from alembic import op

revision: str = "0016_memory_vectors"
down_revision: str | None = "0015_reminders"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "memory_vectors",
        sa.Column("memory_id", advanced_alchemy.types.GUID(length=16), nullable=False),
        sa.Column("owner_id", advanced_alchemy.types.GUID(length=16), nullable=False),
        sa.Column("model", sa.String(length=100), nullable=False),
        sa.Column(
            "memory_updated_at",
            advanced_alchemy.types.datetime.DateTimeUTC(timezone=True),
            nullable=False,
        ),
        sa.Column("vector", sa.LargeBinary(), nullable=False),
        sa.ForeignKeyConstraint(
            ["memory_id"],
            ["memories.id"],
            name=op.f("fk_memory_vectors_memory_id_memories"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["owner_id"],
            ["users.id"],
            name=op.f("fk_memory_vectors_owner_id_users"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("memory_id", "model", name=op.f("pk_memory_vectors")),
    )
    op.create_index(
        "ix_memory_vectors_owner_model", "memory_vectors", ["owner_id", "model"], unique=False
    )


def downgrade() -> None:
    op.drop_index("ix_memory_vectors_owner_model", table_name="memory_vectors")
    op.drop_table("memory_vectors")
