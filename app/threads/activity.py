"""The tool-activity cell: its statuses and every transition, as pure functions.

A tool message's `tool_activity` is stored as a JSON dict shaped like the `ToolActivity`
Struct the app reads (app/threads/schemas.py). Everything that writes one builds it
here, so a new status or field is one edit in this module:

    started ─┬─> progressed* ─> finished (success | failure)
             └─> awaiting_approval ─┬─> approved (in_progress) ─> …
                                    └─> denied | expired (failure)
    any open cell ─> closed (failure: the run ended first)

Each function returns a new dict (the input is never changed); timestamps are ISO
strings, as JSON stores them.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from typing import Any, Literal, Protocol

from app.lib.time import utcnow

ToolStatus = Literal["in_progress", "awaiting_approval", "success", "failure"]
IN_PROGRESS: ToolStatus = "in_progress"
AWAITING_APPROVAL: ToolStatus = "awaiting_approval"
SUCCESS: ToolStatus = "success"
FAILURE: ToolStatus = "failure"
OPEN_STATUSES: tuple[ToolStatus, ...] = (IN_PROGRESS, AWAITING_APPROVAL)

WAITING_FOR_APPROVAL = "Waiting for your approval"
APPROVED = "Approved"
EXPIRED = "The approval request expired before anyone decided."
INTERRUPTED = "interrupted"  # the error of a cell closed because its run stopped

Activity = dict[str, Any]


class Outcome(Protocol):
    """What a finished call reports (a ToolResult has this shape)."""

    ok: bool
    data: dict[str, Any] | None
    display_message: str | None
    error: str | None
    error_type: str | None


def status_of(activity: Activity | None) -> str | None:
    return (activity or {}).get("status")


def is_open(activity: Activity | None) -> bool:
    return status_of(activity) in OPEN_STATUSES


def is_awaiting(activity: Activity | None) -> bool:
    return status_of(activity) == AWAITING_APPROVAL


def expires_at(activity: Activity | None) -> datetime | None:
    raw = (activity or {}).get("expires_at")
    return datetime.fromisoformat(raw) if raw else None


def _stamp(now: datetime | None) -> str:
    return (now or utcnow()).isoformat()


def started(
    call_id: str,
    name: str,
    input_: dict[str, Any] | None,
    *,
    approval_ttl: float | None = None,
    now: datetime | None = None,
    step_id: str | None = None,
) -> Activity:
    """A new cell: in_progress, or awaiting_approval for `approval_ttl` seconds; a call
    that executes a plan step carries the step's id."""
    now = now or utcnow()
    awaiting = approval_ttl is not None
    step = {"step_id": step_id} if step_id is not None else {}
    return {
        **step,
        "id": call_id,
        "name": name,
        "status": AWAITING_APPROVAL if awaiting else IN_PROGRESS,
        "input": input_,
        "data": None,
        "display_message": WAITING_FOR_APPROVAL if awaiting else None,
        "error": None,
        "error_type": None,
        "started_at": now.isoformat(),
        "finished_at": None,
        "expires_at": (now + timedelta(seconds=approval_ttl)).isoformat() if awaiting else None,
    }


def progressed(
    activity: Activity | None,
    *,
    display_message: str | None = None,
    data: dict[str, Any] | None = None,
) -> Activity:
    """A tool's progress report: a new display message and/or data merged in."""
    changed = dict(activity or {})
    if display_message is not None:
        changed["display_message"] = display_message
    if data is not None:
        changed["data"] = {**(changed.get("data") or {}), **data}
    return changed


def finished(
    activity: Activity | None, outcome: Outcome, *, now: datetime | None = None
) -> Activity:
    """The call's result: success with its data, or failure keeping the progress data."""
    activity = activity or {}
    return {
        **activity,
        "status": SUCCESS if outcome.ok else FAILURE,
        "data": outcome.data if outcome.ok else activity.get("data"),
        "display_message": outcome.display_message,
        "error": None if outcome.ok else outcome.error,
        "error_type": None if outcome.ok else outcome.error_type,
        "finished_at": _stamp(now),
        "expires_at": None,
    }


def approved(activity: Activity) -> Activity:
    """The user approved: the call runs (in_progress) and no longer expires."""
    return {**activity, "status": IN_PROGRESS, "display_message": APPROVED, "expires_at": None}


def denied(activity: Activity, error: str) -> Activity:
    """The user said no (or nobody decided in time): failure with permission_error."""
    return {
        **activity,
        "status": FAILURE,
        "error": error,
        "error_type": "permission_error",
        "display_message": None,
        "finished_at": _stamp(None),
        "expires_at": None,
    }


def expired(activity: Activity) -> Activity:
    return denied(activity, EXPIRED)


def closed(
    activity: Activity, *, error_type: str, error: str, now: datetime | None = None
) -> Activity:
    """An open cell whose run ended first (cancel, timeout, crash): failure."""
    return {
        **activity,
        "status": FAILURE,
        "error": error,
        "error_type": error_type,
        "finished_at": _stamp(now),
        "expires_at": None,
    }


def failure_content(error: str, error_type: str) -> str:
    """What the model reads for a call that ended without a tool result."""
    return json.dumps({"ok": False, "error": error, "error_type": error_type})
