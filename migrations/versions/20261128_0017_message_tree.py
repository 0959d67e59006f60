"""thread_messages.parent_id and threads.current_leaf_id: a thread's messages as a tree

A user can edit a question or ask for another answer: the new version is a sibling of
the old one (the same parent), and the thread shows the branch that ends at its current
leaf. Existing threads become one branch each: a message's parent is the message before
it (by position), the thread's current leaf its last message.
`sibling_ids` is null on a message that is the only version (every existing one).

Revision ID: 0017_message_tree
Revises: 0014_mcp_refresh_claim
"""

from __future__ import annotations

from collections.abc import Sequence

import advanced_alchemy.types
import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0017_message_tree"
down_revision: str | None = "0016_memory_vectors"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# Correlated subqueries, the same text on SQLite and PostgreSQL; each an index probe on
# (thread_id, position).
_PARENTS = """
UPDATE thread_messages SET parent_id = (
    SELECT earlier.id FROM thread_messages AS earlier
    WHERE earlier.thread_id = thread_messages.thread_id
      AND earlier.position < thread_messages.position
    ORDER BY earlier.position DESC LIMIT 1
)
"""
_LEAVES = """
UPDATE threads SET current_leaf_id = (
    SELECT newest.id FROM thread_messages AS newest
    WHERE newest.thread_id = threads.id
    ORDER BY newest.position DESC LIMIT 1
)
"""


def upgrade() -> None:
    with op.batch_alter_table("thread_messages") as batch:
        batch.add_column(
            sa.Column("parent_id", advanced_alchemy.types.guid.GUID(length=16), nullable=True)
        )
        batch.add_column(
            sa.Column(
                "sibling_ids",
                sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
                nullable=True,
            )
        )
        batch.create_index("ix_thread_messages_parent", ["thread_id", "parent_id"], unique=False)
    with op.batch_alter_table("threads") as batch:
        batch.add_column(
            sa.Column("current_leaf_id", advanced_alchemy.types.guid.GUID(length=16), nullable=True)
        )
    op.execute(_PARENTS)
    op.execute(_LEAVES)


def downgrade() -> None:
    with op.batch_alter_table("threads") as batch:
        batch.drop_column("current_leaf_id")
    with op.batch_alter_table("thread_messages") as batch:
        batch.drop_index("ix_thread_messages_parent")
        batch.drop_column("sibling_ids")
        batch.drop_column("parent_id")
