"""A phone that receives push notifications (APNs device token of one app install)."""

from __future__ import annotations

from uuid import UUID

from sqlalchemy import ForeignKey, Index, String
from sqlalchemy.orm import Mapped, mapped_column

from app.db.base import Base


class Device(Base):
    __tablename__ = "devices"
    __table_args__ = (
        # A token is one install: registering it again (any user) updates this row.
        Index("uq_devices_token", "token", unique=True),
        Index("ix_devices_user", "user_id"),
    )

    user_id: Mapped[UUID] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    token: Mapped[str] = mapped_column(String(200))
    platform: Mapped[str] = mapped_column(String(16), default="ios")
    environment: Mapped[str] = mapped_column(String(16))  # sandbox | production
    bundle_id: Mapped[str] = mapped_column(String(200))
    locale: Mapped[str | None] = mapped_column(String(35), default=None)
