"""runs: model usage and cost (input, output, cached, reasoning tokens; cost in 1e-9 USD)

Summed over a run's model calls as the providers reported them and written when the run
ends; nullable, so existing rows are not rewritten (None: no usage recorded).

Revision ID: 0011_run_usage
Revises: 0010_mcp_connections
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0011_run_usage"
down_revision: str | None = "0010_mcp_connections"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TOKEN_COLUMNS = ("input_tokens", "output_tokens", "cached_tokens", "reasoning_tokens")


def upgrade() -> None:
    with op.batch_alter_table("runs") as batch:
        for name in TOKEN_COLUMNS:
            batch.add_column(sa.Column(name, sa.BigInteger(), nullable=True))
        batch.add_column(sa.Column("cost_nanousd", sa.BigInteger(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("runs") as batch:
        batch.drop_column("cost_nanousd")
        for name in reversed(TOKEN_COLUMNS):
            batch.drop_column(name)
