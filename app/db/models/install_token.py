"""What every push token of an app install is: one user's, one row per token."""

from __future__ import annotations

from uuid import UUID

from sqlalchemy import ForeignKey, Index, String
from sqlalchemy.orm import Mapped, declared_attr, mapped_column


class InstallToken:
    """A user's push token of one app install (a `token` column of the table's own
    length): unique, so registering it again (any user) updates the row, and indexed
    by user (`uq_<table>_token`, `ix_<table>_user`)."""

    __tablename__: str

    @declared_attr.directive
    @classmethod
    def __table_args__(cls) -> tuple[Index, ...]:
        return (
            Index(f"uq_{cls.__tablename__}_token", "token", unique=True),
            Index(f"ix_{cls.__tablename__}_user", "user_id"),
        )

    user_id: Mapped[UUID] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    environment: Mapped[str] = mapped_column(String(16))  # sandbox | production
