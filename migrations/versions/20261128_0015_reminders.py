"""tasks: reminders (remind_before_seconds, remind_at, reminded_at); schedules

A task with `due_at` is recalled by push at `due_at - remind_before_seconds`. The pending
reminder's time is `remind_at` (indexed: the scheduler's claim and its next wake-up read
the earliest); the claim moves it to `reminded_at` in the same statement. A schedule
starts runs on a thread at its times (`next_run_at`, claimed the same way).

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
    guid = advanced_alchemy.types.guid.GUID(length=16)
    op.create_table(
        "schedules",
        sa.Column("id", guid, nullable=False),
        sa.Column("owner_id", guid, nullable=False),
        sa.Column("thread_id", guid, nullable=False),
        sa.Column("prompt", sa.Text(), nullable=False),
        sa.Column("kind", sa.String(length=8), nullable=False),
        sa.Column("rule", sa.String(length=500), nullable=True),
        sa.Column("time_zone", sa.String(length=64), nullable=False),
        _time("run_at"),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("paused_reason", sa.String(length=200), nullable=True),
        _time("next_run_at"),
        _time("last_run_at"),
        sa.Column("last_run_id", guid, nullable=True),
        sa.Column("failures", sa.Integer(), nullable=False),
        sa.Column("sa_orm_sentinel", sa.Integer(), nullable=True),
        sa.Column(
            "created_at",
            advanced_alchemy.types.datetime.DateTimeUTC(timezone=True),
            nullable=False,
        ),
        sa.Column(
            "updated_at",
            advanced_alchemy.types.datetime.DateTimeUTC(timezone=True),
            nullable=False,
        ),
        sa.ForeignKeyConstraint(
            ["owner_id"], ["users.id"], name=op.f("fk_schedules_owner_id_users"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["thread_id"],
            ["threads.id"],
            name=op.f("fk_schedules_thread_id_threads"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_schedules")),
    )
    op.create_index("ix_schedules_owner", "schedules", ["owner_id", "created_at"], unique=False)
    op.create_index("ix_schedules_next_run_at", "schedules", ["next_run_at"], unique=False)


def downgrade() -> None:
    op.drop_index("ix_schedules_next_run_at", table_name="schedules")
    op.drop_index("ix_schedules_owner", table_name="schedules")
    op.drop_table("schedules")
    with op.batch_alter_table("tasks") as batch:
        batch.drop_index("ix_tasks_remind_at")
        batch.drop_column("reminded_at")
        batch.drop_column("remind_at")
        batch.drop_column("remind_before_seconds")
