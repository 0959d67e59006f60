from __future__ import annotations

from datetime import datetime
from typing import Annotated
from uuid import UUID

import msgspec

from app.lib.schema import Input, Schema

Email = Annotated[str, msgspec.Meta(min_length=3, max_length=320, pattern=r"^[^@ ]+@[^@ ]+$")]
Password = Annotated[str, msgspec.Meta(min_length=1, max_length=1024)]


class UserRead(Schema):
    id: UUID
    email: str
    display_name: str | None
    is_staff: bool
    created_at: datetime


class TokenCreate(Input):
    email: Email
    password: Password


class TokenRead(Schema):
    access_token: str
    token_type: str
    expires_at: datetime
    user: UserRead
