"""Live Activities the app manages: per-run registrations and push-to-start tokens

`live_activities.scope` says whether a registration follows a thread (its current or
next run) or one run; `live_activity_start_tokens` holds each app install's ActivityKit
push-to-start token (iOS 17.2+), by which a run started elsewhere starts a Live Activity.

Revision ID: 0009_live_activity_management
Revises: 0008_push_event_retries
"""

from __future__ import annotations

from collections.abc import Sequence

import advanced_alchemy.types
import sqlalchemy as sa
from alembic import op

revision: str = "0009_live_activity_management"
down_revision: str | None = "0008_push_event_retries"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

GUID = advanced_alchemy.types.guid.GUID
MOMENT = advanced_alchemy.types.datetime.DateTimeUTC


def upgrade() -> None:
    with op.batch_alter_table("live_activities") as batch:
        # Every registration so far was made on a thread.
        batch.add_column(
            sa.Column("scope", sa.String(length=8), nullable=False, server_default="thread")
        )
    op.create_table(
        "live_activity_start_tokens",
        sa.Column("id", GUID(length=16), nullable=False),
        sa.Column("user_id", GUID(length=16), nullable=False),
        sa.Column("token", sa.String(length=400), nullable=False),
        sa.Column("environment", sa.String(length=16), nullable=False),
        sa.Column("sa_orm_sentinel", sa.Integer(), nullable=True),
        sa.Column("created_at", MOMENT(timezone=True), nullable=False),
        sa.Column("updated_at", MOMENT(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["user_id"],
            ["users.id"],
            name=op.f("fk_live_activity_start_tokens_user_id_users"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_live_activity_start_tokens")),
    )
    with op.batch_alter_table("live_activity_start_tokens") as batch:
        batch.create_index("ix_live_activity_start_tokens_user", ["user_id"], unique=False)
        batch.create_index("uq_live_activity_start_tokens_token", ["token"], unique=True)


def downgrade() -> None:
    with op.batch_alter_table("live_activity_start_tokens") as batch:
        batch.drop_index("uq_live_activity_start_tokens_token")
        batch.drop_index("ix_live_activity_start_tokens_user")
    op.drop_table("live_activity_start_tokens")
    with op.batch_alter_table("live_activities") as batch:
        batch.drop_column("scope")
