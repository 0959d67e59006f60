"""Account rows to response Structs."""

from __future__ import annotations

import msgspec

from app.accounts.schemas import UserRead
from app.db.models import User


def user_read(user: User) -> UserRead:
    return msgspec.convert(user, UserRead, from_attributes=True)
