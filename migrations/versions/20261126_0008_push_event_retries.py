"""push_events: a failing event's fan-out is retried alone, then dead-lettered

One event whose fan-out fails no longer holds up the others: it records its attempts,
when to try again and its last error, and after PUSH_MAX_ATTEMPTS is dead-lettered
(`dead_at`).

Revision ID: 0008_push_event_retries
Revises: 0007_run_push_due
"""

from __future__ import annotations

from collections.abc import Sequence

import advanced_alchemy.types
import sqlalchemy as sa
from alembic import op

revision: str = "0008_push_event_retries"
down_revision: str | None = "0007_run_push_due"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _moment(name: str) -> sa.Column:
    return sa.Column(
        name, advanced_alchemy.types.datetime.DateTimeUTC(timezone=True), nullable=True
    )


def upgrade() -> None:
    with op.batch_alter_table("push_events") as batch:
        # Rows waiting at upgrade time have had no failed attempt.
        batch.add_column(sa.Column("attempts", sa.Integer(), nullable=False, server_default="0"))
        batch.add_column(_moment("next_attempt_at"))
        batch.add_column(sa.Column("last_error", sa.Text(), nullable=True))
        batch.add_column(_moment("dead_at"))


def downgrade() -> None:
    with op.batch_alter_table("push_events") as batch:
        batch.drop_column("dead_at")
        batch.drop_column("last_error")
        batch.drop_column("next_attempt_at")
        batch.drop_column("attempts")
