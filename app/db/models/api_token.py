from __future__ import annotations

from datetime import datetime
from uuid import UUID

from sqlalchemy import ForeignKey, String
from sqlalchemy.orm import Mapped, mapped_column, relationship

from app.db.base import Base, DateTimeUTC
from app.db.models.user import User


class ApiToken(Base):
    """A bearer token; only its SHA-256 digest is stored."""

    __tablename__ = "api_tokens"

    user_id: Mapped[UUID] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    expires_at: Mapped[datetime] = mapped_column(DateTimeUTC(timezone=True))
    revoked_at: Mapped[datetime | None] = mapped_column(DateTimeUTC(timezone=True), default=None)

    user: Mapped[User] = relationship(lazy="joined", innerjoin=True)
