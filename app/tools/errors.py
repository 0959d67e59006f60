"""The error vocabulary of the tools contract: every failed call names one of these.

It is part of the bottom layer (tools) so the threads schemas (tool_activity.error_type)
import it from here, not the other way round.
"""

from __future__ import annotations

from typing import Literal

from app.lib.open_schemas import open_enum

ErrorType = Literal[
    "validation_error",
    "user_error",
    "system_error",
    "permission_error",
    "security_error",
    "timeout",
    "cancelled",
]
ERROR_TYPES: tuple[str, ...] = ErrorType.__args__  # type: ignore[attr-defined]
open_enum(ErrorType, "ErrorType")  # new values may come: clients keep a fallback


def error_type_for_status(status: int) -> ErrorType:
    """The error type of a domain service's refusal, from the HTTP status the API gives it."""
    if status in (401, 403):
        return "permission_error"
    if status in (404, 410):
        return "user_error"
    if status >= 500:
        return "system_error"
    return "validation_error"  # 400, 409 (a name already taken), 422
