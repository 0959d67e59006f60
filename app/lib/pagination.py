"""Opaque cursors and page-size limits."""

from __future__ import annotations

import base64
import binascii
from datetime import datetime
from typing import Annotated
from uuid import UUID

import msgspec
from litestar.params import Parameter

from app.lib.problems import ProblemException
from app.lib.schema import AwareDatetime

MAX_PAGE_SIZE = 100
DEFAULT_PAGE_SIZE = 50

# A list endpoint's `limit`: the contract caps values above the maximum rather than
# refusing them (a client asking for "everything" still gets a page); below 1 is a 400,
# and so is a number no page size could be (every input integer is bounded).
PageLimit = Annotated[
    int,
    Parameter(
        ge=1,
        le=2**31 - 1,  # an int32 every generator reads
        description=f"Page size, at most {MAX_PAGE_SIZE}: larger values are capped at it.",
    ),
]


def page_size(limit: int) -> int:
    """The page size to serve for a requested `limit` (already at least 1)."""
    return min(limit, MAX_PAGE_SIZE)


class _Key(msgspec.Struct, array_like=True):
    at: AwareDatetime  # a forged naive one could not be compared with stored UTC times
    id: UUID


def encode_cursor(at: datetime, id_: UUID) -> str:
    return base64.urlsafe_b64encode(msgspec.json.encode(_Key(at, id_))).decode().rstrip("=")


def decode_cursor(cursor: str) -> tuple[datetime, UUID]:
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        key = msgspec.json.decode(raw, type=_Key)
    except (binascii.Error, ValueError, msgspec.DecodeError) as exc:
        raise ProblemException(400, "Invalid cursor.") from exc
    return key.at, key.id
