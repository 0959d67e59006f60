"""memory_vector_versions: one row per user, bumped with every change to its vectors

The per-process cache of a user's vectors reads this row to know it is still good (one
indexed row) instead of an aggregate over the rows holding the blobs. No row reads as
version 0, so existing users need none: a process's cache starts empty, and their next
change to their vectors writes their row.

Revision ID: 0019_memory_vector_versions
Revises: 0018_attachments
"""

from __future__ import annotations

from collections.abc import Sequence

import advanced_alchemy.types
import sqlalchemy as sa
from alembic import op

revision: str = "0019_memory_vector_versions"
down_revision: str | None = "0018_attachments"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "memory_vector_versions",
        sa.Column("owner_id", advanced_alchemy.types.GUID(length=16), nullable=False),
        sa.Column("version", sa.BigInteger(), nullable=False),
        sa.Column(
            "updated_at",
            advanced_alchemy.types.datetime.DateTimeUTC(timezone=True),
            nullable=False,
        ),
        sa.ForeignKeyConstraint(
            ["owner_id"],
            ["users.id"],
            name=op.f("fk_memory_vector_versions_owner_id_users"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("owner_id", name=op.f("pk_memory_vector_versions")),
    )


def downgrade() -> None:
    op.drop_table("memory_vector_versions")
