"""Base Structs for request and response bodies."""

from __future__ import annotations

from typing import Annotated, Any

import msgspec


class Schema(msgspec.Struct, kw_only=True):
    """A response body."""


class Input(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """A request body: unknown fields are rejected so typos never pass silently."""

    def sent_fields(self) -> dict[str, Any]:
        """The fields the client sent (a PATCH body leaves the others UNSET)."""
        return {k: v for k, v in msgspec.structs.asdict(self).items() if v is not msgspec.UNSET}


# Bounded scalars: an unbounded integer past 64 bits would reach the database.
NonNegativeInt = Annotated[int, msgspec.Meta(ge=0, le=2**53)]
ShortText = Annotated[str, msgspec.Meta(min_length=1, max_length=200)]
