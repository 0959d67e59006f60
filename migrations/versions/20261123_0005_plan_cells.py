"""plan cells

A planner run's plan, stored on its assistant message (`thread_messages.plan`).

Revision ID: 0005_plan_cells
Revises: 0003_runner_heartbeats
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0005_plan_cells"
down_revision: str | None = "0004_push"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("thread_messages") as batch:
        batch.add_column(
            sa.Column(
                "plan",
                sa.JSON()
                .with_variant(postgresql.JSONB(astext_type=sa.Text()), "cockroachdb")
                .with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
                nullable=True,
            )
        )


def downgrade() -> None:
    with op.batch_alter_table("thread_messages") as batch:
        batch.drop_column("plan")
