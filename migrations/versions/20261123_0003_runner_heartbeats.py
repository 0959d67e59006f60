"""runner heartbeats

One row per live runner process, renewed every half second: a peer whose heartbeat
stops is taken for dead within seconds, long before its runs' leases expire.

Revision ID: 0003_runner_heartbeats
Revises: 0002_memory_search
"""

from __future__ import annotations

from collections.abc import Sequence

import advanced_alchemy.types
import sqlalchemy as sa
from alembic import op

revision: str = "0003_runner_heartbeats"
down_revision: str | None = "0002_memory_search"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "runner_heartbeats",
        sa.Column("owner", sa.String(length=100), nullable=False),
        sa.Column(
            "beat_at", advanced_alchemy.types.datetime.DateTimeUTC(timezone=True), nullable=False
        ),
        sa.PrimaryKeyConstraint("owner", name=op.f("pk_runner_heartbeats")),
    )


def downgrade() -> None:
    op.drop_table("runner_heartbeats")
