"""Base Structs for request and response bodies."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any

import msgspec


def served_time(value: datetime) -> datetime:
    """`value` in UTC with whole seconds: encoded `YYYY-MM-DDTHH:MM:SSZ`.

    Swift's `JSONDecoder.dateDecodingStrategy = .iso8601` rejects fractional seconds, so
    no response or websocket frame carries them. Naive values are UTC (SQLite drops the
    zone). Stored values keep their precision: cursors and ordering read the rows.
    """
    aware = value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
    return aware.replace(microsecond=0)


class Schema(msgspec.Struct, kw_only=True):
    """A response body. Its datetime fields are served with whole seconds (`served_time`)."""

    def __post_init__(self) -> None:
        for name in self.__struct_fields__:
            value = getattr(self, name)
            if isinstance(value, datetime):
                msgspec.structs.force_setattr(self, name, served_time(value))


class Input(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """A request body: unknown fields are rejected so typos never pass silently."""

    def sent_fields(self) -> dict[str, Any]:
        """The fields the client sent (a PATCH body leaves the others UNSET)."""
        return {k: v for k, v in msgspec.structs.asdict(self).items() if v is not msgspec.UNSET}


# Bounded scalars: an unbounded integer past 64 bits would reach the database.
NonNegativeInt = Annotated[int, msgspec.Meta(ge=0, le=2**53)]
ShortText = Annotated[str, msgspec.Meta(min_length=1, max_length=200)]
# Every datetime a client sends: a naive one is ambiguous (whose local time?) and
# cannot be compared with the stored UTC values, so it is refused with a 400.
AwareDatetime = Annotated[datetime, msgspec.Meta(tz=True)]
