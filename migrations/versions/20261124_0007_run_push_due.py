"""runs.push_due: a run's end is its own push outbox entry

The UPDATE that ends a run sets `push_due` when someone may need to hear of it (push on,
a device not watching the thread, or an open Live Activity); the sender fans those out
and clears the flag. A partial index keeps the sender's look-up to the due few.

Revision ID: 0007_run_push_due
Revises: 0006_agent_delegation
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0007_run_push_due"
down_revision: str | None = "0006_agent_delegation"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("runs") as batch:
        batch.add_column(sa.Column("push_due", sa.Boolean(), nullable=True))
    op.create_index(
        "ix_runs_push_due",
        "runs",
        ["push_due"],
        sqlite_where=sa.text("push_due = 1"),
        postgresql_where=sa.text("push_due"),
    )


def downgrade() -> None:
    op.drop_index("ix_runs_push_due", table_name="runs")
    with op.batch_alter_table("runs") as batch:
        batch.drop_column("push_due")
