"""runs: lease_epoch, the lease's fencing token

Raised by every claim and by the reaper that fails a run; a runner's writes for a run carry
it (app/threads/fence.py), so one that lost its lease has them refused. Existing rows
start at 0 (a running run's runner, from before this revision, holds epoch 0).

Revision ID: 0012_run_lease_epoch
Revises: 0011_run_usage
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0012_run_lease_epoch"
down_revision: str | None = "0011_run_usage"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("runs") as batch:
        batch.add_column(
            sa.Column("lease_epoch", sa.BigInteger(), nullable=False, server_default="0")
        )


def downgrade() -> None:
    with op.batch_alter_table("runs") as batch:
        batch.drop_column("lease_epoch")
