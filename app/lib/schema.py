"""Base Structs for request and response bodies."""

from __future__ import annotations

import types
import typing
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


def served_timestamp(value: datetime) -> str:
    """`value` as every payload we write by hand carries it (push payloads, not Structs):
    `YYYY-MM-DDTHH:MM:SSZ`, the very text msgspec writes for a `served_time`."""
    return served_time(value).strftime("%Y-%m-%dT%H:%M:%SZ")


def _may_hold_datetime(annotation: Any) -> bool:
    """A datetime, Any, or a union with one of those (a dict or list is never a datetime)."""
    if annotation is datetime or annotation is Any:
        return True
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        return any(_may_hold_datetime(arg) for arg in typing.get_args(annotation))
    return False


_DATETIME_FIELDS: dict[type, tuple[str, ...]] = {}


def _datetime_fields(cls: type) -> tuple[str, ...]:
    """The fields of `cls` whose declared type admits a datetime, looked up once per class
    (most fields of most responses cannot hold one)."""
    try:
        hints = typing.get_type_hints(cls, include_extras=False)
    except Exception:  # unresolvable annotations: look at every field, as before
        return tuple(cls.__struct_fields__)  # type: ignore[attr-defined]
    return tuple(
        name
        for name in cls.__struct_fields__  # type: ignore[attr-defined]
        if _may_hold_datetime(hints.get(name, Any))
    )


class Schema(msgspec.Struct, kw_only=True):
    """A response body. Its datetime fields are served with whole seconds (`served_time`)."""

    def __post_init__(self) -> None:
        cls = type(self)
        names = _DATETIME_FIELDS.get(cls)
        if names is None:
            names = _DATETIME_FIELDS[cls] = _datetime_fields(cls)
        for name in names:
            value = getattr(self, name)
            if isinstance(value, datetime):
                msgspec.structs.force_setattr(self, name, served_time(value))


# The years a date may take: one far outside them overflows when moved between time
# zones (year 1 at +01:00 has no UTC) and means nothing for a task or a schedule.
EARLIEST_YEAR, LATEST_YEAR = 1900, 9000


def check_dates(struct: msgspec.Struct) -> None:
    """A ValueError (msgspec makes it a validation error, a 400) for a datetime field
    outside EARLIEST_YEAR..LATEST_YEAR."""
    for name in struct.__struct_fields__:
        value = getattr(struct, name)
        if isinstance(value, datetime) and not EARLIEST_YEAR <= value.year <= LATEST_YEAR:
            raise ValueError(
                f"`{name}` must be a date between the years {EARLIEST_YEAR} and {LATEST_YEAR}"
            )


class Input(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """A request body: unknown fields are rejected so typos never pass silently, and
    dates outside the years a calendar holds (`check_dates`) are refused."""

    def __post_init__(self) -> None:
        check_dates(self)

    def sent_fields(self) -> dict[str, Any]:
        """The fields the client sent (a PATCH body leaves the others UNSET)."""
        return {k: v for k, v in msgspec.structs.asdict(self).items() if v is not msgspec.UNSET}


# Bounded scalars: an unbounded integer past 64 bits would reach the database.
NonNegativeInt = Annotated[int, msgspec.Meta(ge=0, le=2**53)]
ShortText = Annotated[str, msgspec.Meta(min_length=1, max_length=200)]
# Every datetime a client sends: a naive one is ambiguous (whose local time?) and
# cannot be compared with the stored UTC values, so it is refused with a 400.
AwareDatetime = Annotated[datetime, msgspec.Meta(tz=True)]
