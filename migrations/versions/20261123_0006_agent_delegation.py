"""agents as specialists: description, tool_description, enabled

A delegating agent sees each enabled specialist as an `ask_<name>` tool described by its
`tool_description` (or `description`); a disabled one is not offered.

Revision ID: 0006_agent_delegation
Revises: 0003_runner_heartbeats
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0006_agent_delegation"
down_revision: str | None = "0005_plan_cells"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("agents") as batch:
        batch.add_column(sa.Column("description", sa.String(length=500), nullable=True))
        batch.add_column(sa.Column("tool_description", sa.Text(), nullable=True))
        batch.add_column(
            sa.Column("enabled", sa.Boolean(), server_default=sa.true(), nullable=False)
        )


def downgrade() -> None:
    with op.batch_alter_table("agents") as batch:
        batch.drop_column("enabled")
        batch.drop_column("tool_description")
        batch.drop_column("description")
