"""A phone that receives push notifications (APNs device token of one app install)."""

from __future__ import annotations

from sqlalchemy import String
from sqlalchemy.orm import Mapped, mapped_column

from app.db.base import Base
from app.db.models.install_token import InstallToken


class Device(InstallToken, Base):
    __tablename__ = "devices"

    token: Mapped[str] = mapped_column(String(200))
    platform: Mapped[str] = mapped_column(String(16), default="ios")
    bundle_id: Mapped[str] = mapped_column(String(200))
    locale: Mapped[str | None] = mapped_column(String(35), default=None)
