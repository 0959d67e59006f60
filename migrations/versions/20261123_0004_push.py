"""push notifications: devices, the push outbox, Live Activities, socket presence

Devices (APNs tokens), push events written with the change that causes them and their
per-token deliveries (unique per event and token), ActivityKit tokens per thread, and
which threads have a live socket in some server process.

Revision ID: 0004_push
Revises: 0003_runner_heartbeats
"""

from __future__ import annotations

from collections.abc import Sequence

import advanced_alchemy.types
import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0004_push"
down_revision: str | None = "0003_runner_heartbeats"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "push_presence",
        sa.Column("owner", sa.String(length=100), nullable=False),
        sa.Column("user_id", advanced_alchemy.types.guid.GUID(length=16), nullable=False),
        sa.Column("thread_id", advanced_alchemy.types.guid.GUID(length=16), nullable=False),
        sa.Column(
            "expires_at", advanced_alchemy.types.datetime.DateTimeUTC(timezone=True), nullable=False
        ),
        sa.PrimaryKeyConstraint("owner", "user_id", "thread_id", name=op.f("pk_push_presence")),
    )
    op.create_table(
        "devices",
        sa.Column("id", advanced_alchemy.types.guid.GUID(length=16), nullable=False),
        sa.Column("user_id", advanced_alchemy.types.guid.GUID(length=16), nullable=False),
        sa.Column("token", sa.String(length=200), nullable=False),
        sa.Column("platform", sa.String(length=16), nullable=False),
        sa.Column("environment", sa.String(length=16), nullable=False),
        sa.Column("bundle_id", sa.String(length=200), nullable=False),
        sa.Column("locale", sa.String(length=35), nullable=True),
        sa.Column("sa_orm_sentinel", sa.Integer(), nullable=True),
        sa.Column(
            "created_at", advanced_alchemy.types.datetime.DateTimeUTC(timezone=True), nullable=False
        ),
        sa.Column(
            "updated_at", advanced_alchemy.types.datetime.DateTimeUTC(timezone=True), nullable=False
        ),
        sa.ForeignKeyConstraint(
            ["user_id"], ["users.id"], name=op.f("fk_devices_user_id_users"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_devices")),
    )
    with op.batch_alter_table("devices", schema=None) as batch_op:
        batch_op.create_index("ix_devices_user", ["user_id"], unique=False)
        batch_op.create_index("uq_devices_token", ["token"], unique=True)

    op.create_table(
        "live_activities",
        sa.Column("id", advanced_alchemy.types.guid.GUID(length=16), nullable=False),
        sa.Column("user_id", advanced_alchemy.types.guid.GUID(length=16), nullable=False),
        sa.Column("thread_id", advanced_alchemy.types.guid.GUID(length=16), nullable=False),
        sa.Column("run_id", advanced_alchemy.types.guid.GUID(length=16), nullable=True),
        sa.Column("push_token", sa.String(length=400), nullable=False),
        sa.Column("environment", sa.String(length=16), nullable=False),
        sa.Column(
            "last_state",
            sa.JSON()
            .with_variant(postgresql.JSONB(astext_type=sa.Text()), "cockroachdb")
            .with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=True,
        ),
        sa.Column(
            "last_sent_at",
            advanced_alchemy.types.datetime.DateTimeUTC(timezone=True),
            nullable=True,
        ),
        sa.Column("updates_sent", sa.Integer(), nullable=False),
        sa.Column(
            "ended_at", advanced_alchemy.types.datetime.DateTimeUTC(timezone=True), nullable=True
        ),
        sa.Column("sa_orm_sentinel", sa.Integer(), nullable=True),
        sa.Column(
            "created_at", advanced_alchemy.types.datetime.DateTimeUTC(timezone=True), nullable=False
        ),
        sa.Column(
            "updated_at", advanced_alchemy.types.datetime.DateTimeUTC(timezone=True), nullable=False
        ),
        sa.ForeignKeyConstraint(
            ["thread_id"],
            ["threads.id"],
            name=op.f("fk_live_activities_thread_id_threads"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["user_id"],
            ["users.id"],
            name=op.f("fk_live_activities_user_id_users"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_live_activities")),
    )
    with op.batch_alter_table("live_activities", schema=None) as batch_op:
        batch_op.create_index("ix_live_activities_thread", ["thread_id", "ended_at"], unique=False)
        batch_op.create_index("uq_live_activities_token", ["push_token"], unique=True)

    op.create_table(
        "push_events",
        sa.Column("id", advanced_alchemy.types.guid.GUID(length=16), nullable=False),
        sa.Column("kind", sa.String(length=32), nullable=False),
        sa.Column("event_key", sa.String(length=200), nullable=False),
        sa.Column("user_id", advanced_alchemy.types.guid.GUID(length=16), nullable=True),
        sa.Column("thread_id", advanced_alchemy.types.guid.GUID(length=16), nullable=True),
        sa.Column("run_id", advanced_alchemy.types.guid.GUID(length=16), nullable=True),
        sa.Column("message_id", advanced_alchemy.types.guid.GUID(length=16), nullable=True),
        sa.Column("seq", sa.BigInteger(), nullable=True),
        sa.Column(
            "data",
            sa.JSON()
            .with_variant(postgresql.JSONB(astext_type=sa.Text()), "cockroachdb")
            .with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=True,
        ),
        sa.Column(
            "fanned_out_at",
            advanced_alchemy.types.datetime.DateTimeUTC(timezone=True),
            nullable=True,
        ),
        sa.Column("sa_orm_sentinel", sa.Integer(), nullable=True),
        sa.Column(
            "created_at", advanced_alchemy.types.datetime.DateTimeUTC(timezone=True), nullable=False
        ),
        sa.Column(
            "updated_at", advanced_alchemy.types.datetime.DateTimeUTC(timezone=True), nullable=False
        ),
        sa.ForeignKeyConstraint(
            ["thread_id"],
            ["threads.id"],
            name=op.f("fk_push_events_thread_id_threads"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["user_id"], ["users.id"], name=op.f("fk_push_events_user_id_users"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_push_events")),
    )
    with op.batch_alter_table("push_events", schema=None) as batch_op:
        batch_op.create_index("ix_push_events_pending", ["fanned_out_at"], unique=False)

    op.create_table(
        "push_deliveries",
        sa.Column("id", advanced_alchemy.types.guid.GUID(length=16), nullable=False),
        sa.Column("event_key", sa.String(length=200), nullable=False),
        sa.Column("token", sa.String(length=400), nullable=False),
        sa.Column("device_id", advanced_alchemy.types.guid.GUID(length=16), nullable=True),
        sa.Column("live_activity_id", advanced_alchemy.types.guid.GUID(length=16), nullable=True),
        sa.Column("environment", sa.String(length=16), nullable=False),
        sa.Column("topic", sa.String(length=300), nullable=False),
        sa.Column("push_type", sa.String(length=16), nullable=False),
        sa.Column("priority", sa.Integer(), nullable=False),
        sa.Column("expiration", sa.BigInteger(), nullable=False),
        sa.Column("collapse_id", sa.String(length=64), nullable=True),
        sa.Column(
            "payload",
            sa.JSON()
            .with_variant(postgresql.JSONB(astext_type=sa.Text()), "cockroachdb")
            .with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
        ),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column(
            "next_attempt_at",
            advanced_alchemy.types.datetime.DateTimeUTC(timezone=True),
            nullable=False,
        ),
        sa.Column("last_error", sa.Text(), nullable=True),
        sa.Column(
            "sent_at", advanced_alchemy.types.datetime.DateTimeUTC(timezone=True), nullable=True
        ),
        sa.Column("sa_orm_sentinel", sa.Integer(), nullable=True),
        sa.Column(
            "created_at", advanced_alchemy.types.datetime.DateTimeUTC(timezone=True), nullable=False
        ),
        sa.Column(
            "updated_at", advanced_alchemy.types.datetime.DateTimeUTC(timezone=True), nullable=False
        ),
        sa.ForeignKeyConstraint(
            ["device_id"],
            ["devices.id"],
            name=op.f("fk_push_deliveries_device_id_devices"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["live_activity_id"],
            ["live_activities.id"],
            name=op.f("fk_push_deliveries_live_activity_id_live_activities"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_push_deliveries")),
    )
    with op.batch_alter_table("push_deliveries", schema=None) as batch_op:
        batch_op.create_index("ix_push_deliveries_due", ["status", "next_attempt_at"], unique=False)
        batch_op.create_index("uq_push_deliveries_event_token", ["event_key", "token"], unique=True)


def downgrade() -> None:
    with op.batch_alter_table("push_deliveries", schema=None) as batch_op:
        batch_op.drop_index("uq_push_deliveries_event_token")
        batch_op.drop_index("ix_push_deliveries_due")

    op.drop_table("push_deliveries")
    with op.batch_alter_table("push_events", schema=None) as batch_op:
        batch_op.drop_index("ix_push_events_pending")

    op.drop_table("push_events")
    with op.batch_alter_table("live_activities", schema=None) as batch_op:
        batch_op.drop_index("uq_live_activities_token")
        batch_op.drop_index("ix_live_activities_thread")

    op.drop_table("live_activities")
    with op.batch_alter_table("devices", schema=None) as batch_op:
        batch_op.drop_index("uq_devices_token")
        batch_op.drop_index("ix_devices_user")

    op.drop_table("devices")
    op.drop_table("push_presence")
