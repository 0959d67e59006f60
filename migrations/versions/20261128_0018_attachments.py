"""attachments

Files in the conversation: the `attachments` table (a user's uploads and the images tools
return, stored under keys derived from the id) and `thread_messages.attachments`, the
attachments a message references as the app shows them.

Revision ID: 0018_attachments
Revises: 0014_mcp_refresh_claim
"""

from __future__ import annotations

from collections.abc import Sequence

import advanced_alchemy.types
import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0018_attachments"
down_revision: str | None = "0017_message_tree"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_GUID = advanced_alchemy.types.guid.GUID(length=16)
_TIME = advanced_alchemy.types.datetime.DateTimeUTC(timezone=True)


def upgrade() -> None:
    op.create_table(
        "attachments",
        sa.Column("owner_id", _GUID, nullable=False),
        sa.Column("message_id", _GUID, nullable=True),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("content_type", sa.String(length=64), nullable=False),
        sa.Column("source_type", sa.String(length=64), nullable=False),
        sa.Column("filename", sa.String(length=255), nullable=False),
        sa.Column("size_bytes", sa.BigInteger(), nullable=False),
        sa.Column("stored_bytes", sa.BigInteger(), nullable=False),
        sa.Column("width", sa.Integer(), nullable=True),
        sa.Column("height", sa.Integer(), nullable=True),
        sa.Column("page_count", sa.Integer(), nullable=True),
        sa.Column("blurhash", sa.String(length=64), nullable=True),
        sa.Column("text", sa.Text(), nullable=True),
        sa.Column("id", _GUID, nullable=False),
        sa.Column("sa_orm_sentinel", sa.Integer(), nullable=True),
        sa.Column("created_at", _TIME, nullable=False),
        sa.Column("updated_at", _TIME, nullable=False),
        sa.ForeignKeyConstraint(
            ["owner_id"],
            ["users.id"],
            name=op.f("fk_attachments_owner_id_users"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["message_id"],
            ["thread_messages.id"],
            name=op.f("fk_attachments_message_id_thread_messages"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_attachments")),
    )
    op.create_index("ix_attachments_owner_message", "attachments", ["owner_id", "message_id"])
    op.create_index(op.f("ix_attachments_message_id"), "attachments", ["message_id"])
    with op.batch_alter_table("thread_messages") as batch:
        batch.add_column(
            sa.Column(
                "attachments",
                sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
                nullable=True,
            )
        )


def downgrade() -> None:
    with op.batch_alter_table("thread_messages") as batch:
        batch.drop_column("attachments")
    op.drop_index(op.f("ix_attachments_message_id"), table_name="attachments")
    op.drop_index("ix_attachments_owner_message", table_name="attachments")
    op.drop_table("attachments")
