"""tasks: reminders (remind_before_seconds, remind_at, reminded_at)

A task with `due_at` is recalled by push at `due_at - remind_before_seconds`. The pending
reminder's time is `remind_at` (indexed: the scheduler's claim and its next wake-up read
the earliest); the claim moves it to `reminded_at` in the same statement.

Revision ID: 0015_reminders
Revises: 0014_mcp_refresh_claim
"""

from __future__ import annotations

from collections.abc import Sequence

import advanced_alchemy.types
import sqlalchemy as sa
from alembic import op

revision: str = "0015_reminders"
down_revision: str | None = "0014_mcp_refresh_claim"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _time(name: str) -> sa.Column:
    return sa.Column(
        name, advanced_alchemy.types.datetime.DateTimeUTC(timezone=True), nullable=True
    )


def upgrade() -> None:
    with op.batch_alter_table("tasks") as batch:
        batch.add_column(sa.Column("remind_before_seconds", sa.Integer(), nullable=True))
        batch.add_column(_time("remind_at"))
        batch.add_column(_time("reminded_at"))
        batch.create_index("ix_tasks_remind_at", ["remind_at"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("tasks") as batch:
        batch.drop_index("ix_tasks_remind_at")
        batch.drop_column("reminded_at")
        batch.drop_column("remind_at")
        batch.drop_column("remind_before_seconds")
