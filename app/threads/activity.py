"""The tool-activity cell: its statuses and every transition, as pure functions.

A tool message's `tool_activity` is stored as a JSON dict shaped like the `ToolActivity`
Struct the app reads (app/threads/schemas.py). Everything that writes one builds it
here, so a new status or field is one edit in this module:

    (preparing: the model is still writing the call) ─> planned, as one of:
    started ─┬─> progressed* ─> finished (success | failure, with its preview)
             ├─> awaiting_approval ─┬─> approved (in_progress) ─> …
             │                      ├─> denied (failure: permission_error)
             │                      └─> expired (failure: timeout, never a denial)
             ├─> awaiting_device ─┬─> answered (success | failure: the phone's result)
             │                    └─> expired (failure: timeout)
             └─> (in_progress) awaiting_input ─┬─> input given (in_progress) ─> …
                                               └─> expired (failure: timeout)
    any open cell ─> closed (failure: the run ended first)

Each function returns a new dict (the input is never changed); timestamps are ISO
strings, as JSON stores them.
"""

from __future__ import annotations

import json
import math
from datetime import datetime, timedelta
from typing import Any, Literal, Protocol

from app.db import clock
from app.lib.open_schemas import open_enum
from app.tools.preview import call_signature
from app.tools.results import error_data

ToolStatus = Literal[
    "preparing",
    "in_progress",
    "awaiting_approval",
    "awaiting_device",
    "awaiting_input",
    "success",
    "failure",
]
# The model is still writing the call: its name is known, its arguments stream
# (`tool_arguments` frames); not validated yet. It goes in_progress or waiting once written.
PREPARING: ToolStatus = "preparing"
IN_PROGRESS: ToolStatus = "in_progress"
AWAITING_APPROVAL: ToolStatus = "awaiting_approval"
AWAITING_DEVICE: ToolStatus = "awaiting_device"  # a device tool: the phone runs it
# A running call (an MCP tool) asks the user for input; `data.input_request` says what.
AWAITING_INPUT: ToolStatus = "awaiting_input"
SUCCESS: ToolStatus = "success"
FAILURE: ToolStatus = "failure"
WAITING_STATUSES: tuple[ToolStatus, ...] = (AWAITING_APPROVAL, AWAITING_DEVICE, AWAITING_INPUT)
OPEN_STATUSES: tuple[ToolStatus, ...] = (PREPARING, IN_PROGRESS, *WAITING_STATUSES)
open_enum(ToolStatus, "ToolStatus")  # new values may come: clients keep a fallback

WAITING_FOR_APPROVAL = "Waiting for your approval"
APPROVED = "Approved"
# An approval nobody decided is not a denial: no one said no (the model may ask again).
EXPIRED = "No one decided in time."
WAITING_FOR_DEVICE = "Waiting for your phone"
DEVICE_EXPIRED = "The phone did not answer in time (the app may be closed)."
INPUT_EXPIRED = "No one answered the request for input in time."
INPUT_GIVEN = "Answered"
# `data` keys of an input request and its answer: they leave the cell when the call resumes
INPUT_KEYS = ("input_request", "input_response")
PROGRESS = "progress"  # the `type` of a running call's data (app/tools/results.py)
INTERRUPTED = "interrupted"  # the error of a cell closed because its run stopped
# The error of a specialist's cell still open when its delegation ended.
DELEGATION_ENDED = "The specialist stopped before this call ended."

Activity = dict[str, Any]


class Outcome(Protocol):
    """What a finished call reports (a ToolResult has this shape)."""

    ok: bool
    data: dict[str, Any] | None
    display_message: str | None
    error: str | None
    error_type: str | None
    suggestion: str | None
    details: dict[str, Any] | None
    preview: list[str] | None


# Streamed output lives in `data` next to the tool's own fields, and survives the result.
OUTPUT_KEYS = ("output", "truncated")


def status_of(activity: Activity | None) -> str | None:
    return (activity or {}).get("status")


def is_open(activity: Activity | None) -> bool:
    return status_of(activity) in OPEN_STATUSES


def is_awaiting(activity: Activity | None) -> bool:
    return status_of(activity) == AWAITING_APPROVAL


def is_awaiting_device(activity: Activity | None) -> bool:
    return status_of(activity) == AWAITING_DEVICE


def is_waiting(activity: Activity | None) -> bool:
    """Waiting for the user: an approval decision or a device's result."""
    return status_of(activity) in WAITING_STATUSES


def expires_at(activity: Activity | None) -> datetime | None:
    raw = (activity or {}).get("expires_at")
    return datetime.fromisoformat(raw) if raw else None


def _stamp(now: datetime | None) -> str:
    return (now or clock.now()).isoformat()


def _expiry(now: datetime, ttl: float | None) -> str | None:
    """When a wait of `ttl` seconds ends; none for no wait, or one until answered (inf)."""
    if ttl is None or math.isinf(ttl):
        return None
    return (now + timedelta(seconds=ttl)).isoformat()


def preparing(
    call_id: str,
    name: str,
    input_: dict[str, Any] | None,
    *,
    display_message: str | None,
    now: datetime | None = None,
) -> Activity:
    """A cell for a call the model has begun to write: its name, no arguments yet (they
    stream as `tool_arguments` frames), saying `display_message`."""
    return {
        **started(call_id, name, input_, now=now, display_message=display_message),
        "status": PREPARING,
    }


def planned(prepared: Activity | None, activity: Activity) -> Activity:
    """A prepared cell once its call is written and planned: `activity` (what `started`
    made of it), still dated from when the model began writing the call."""
    since = (prepared or {}).get("started_at")
    return {**activity, "started_at": since} if since else activity


def started(
    call_id: str,
    name: str,
    input_: dict[str, Any] | None,
    *,
    approval_ttl: float | None = None,
    device_ttl: float | None = None,
    now: datetime | None = None,
    display_message: str | None = None,
    step_id: str | None = None,
) -> Activity:
    """A new cell: in_progress (saying `display_message`), awaiting_approval for
    `approval_ttl` seconds (infinite: until answered, no `expires_at`), or awaiting_device (the phone runs the tool) for `device_ttl`
    seconds; a call that executes a plan step carries the step's id."""
    now = now or clock.now()
    status, message, ttl = IN_PROGRESS, display_message, None
    if approval_ttl is not None:
        status, message, ttl = AWAITING_APPROVAL, WAITING_FOR_APPROVAL, approval_ttl
    elif device_ttl is not None:
        status, message, ttl = AWAITING_DEVICE, WAITING_FOR_DEVICE, device_ttl
    step = {"step_id": step_id} if step_id is not None else {}
    return {
        **step,
        "id": call_id,
        "name": name,
        "status": status,
        "input": input_,
        "data": None,
        "display_message": message,
        "error": None,
        "error_type": None,
        "started_at": now.isoformat(),
        "finished_at": None,
        "expires_at": _expiry(now, ttl),
    }


def progressed(
    activity: Activity | None,
    *,
    display_message: str | None = None,
    data: dict[str, Any] | None = None,
) -> Activity:
    """A tool's progress report: a new display message and/or data merged in (the data
    of a running call is `type: "progress"`, app/tools/results.py's ToolProgress)."""
    changed = dict(activity or {})
    if display_message is not None:
        changed["display_message"] = display_message
    if data is not None:
        changed["data"] = {**(changed.get("data") or {}), **data, "type": PROGRESS}
    return changed


def output_appended(activity: Activity | None, *, output: str, truncated: bool) -> Activity:
    """The output streamed so far (capped by the caller; `truncated` once it was)."""
    streamed: dict[str, Any] = {"output": output}
    if truncated:
        streamed["truncated"] = True
    return progressed(activity, data=streamed)


def _streamed(activity: Activity) -> dict[str, Any]:
    data = activity.get("data") or {}
    return {key: data[key] for key in OUTPUT_KEYS if key in data}


def _carries(data: dict[str, Any] | None, output: str) -> bool:
    """Whether a field of the result begins with the streamed output (a fetched page's
    text, a specialist's answer): the live copy was a preview of it."""
    text = output.lstrip()
    return bool(text) and any(
        isinstance(value, str) and value.startswith(text) for value in (data or {}).values()
    )


def _result_data(activity: Activity, outcome: Outcome) -> dict[str, Any] | None:
    """Success: the tool's data plus the output it streamed; failure: the error (`type:
    "error"` with its hints) plus the output streamed before it."""
    streamed = _streamed(activity)
    if not outcome.ok:
        error = error_data(
            outcome.error or "", outcome.error_type or "system_error",
            outcome.suggestion, outcome.details,
        )  # fmt: skip
        return {**error, **streamed}
    if not streamed or _carries(outcome.data, streamed.get("output", "")):
        return outcome.data  # the result holds what was streamed: stored once, its own cut
    data = {**(outcome.data or {}), "output": streamed["output"]}
    if streamed.get("truncated") or (outcome.data or {}).get("truncated"):
        data["truncated"] = True
    return data


def finished(
    activity: Activity | None, outcome: Outcome, *, now: datetime | None = None
) -> Activity:
    """The call's result: success with its data, or failure with the error as data;
    streamed output is kept either way (unless the result begins with it: `_carries`),
    and `preview` summarises the result."""
    activity = activity or {}
    return {
        **activity,
        "status": SUCCESS if outcome.ok else FAILURE,
        "data": _result_data(activity, outcome),
        "preview": outcome.preview or _error_preview(None if outcome.ok else outcome.error),
        "display_message": outcome.display_message,
        "error": None if outcome.ok else outcome.error,
        "error_type": None if outcome.ok else outcome.error_type,
        "finished_at": _stamp(now),
        "expires_at": None,
    }


def approved(activity: Activity) -> Activity:
    """The user approved: the call runs (in_progress) and no longer expires."""
    return {**activity, "status": IN_PROGRESS, "display_message": APPROVED, "expires_at": None}


def _error_preview(error: str | None) -> list[str] | None:
    return [error.splitlines()[0][:80]] if error else None


def denied(activity: Activity, error: str) -> Activity:
    """The user said no: failure with permission_error."""
    return {
        **activity,
        "status": FAILURE,
        "data": error_data(error, "permission_error"),
        "preview": _error_preview(error),
        "error": error,
        "error_type": "permission_error",
        "display_message": None,
        "finished_at": _stamp(None),
        "expires_at": None,
    }


def awaiting_input(
    activity: Activity, request: dict[str, Any], ttl: float, *, now: datetime | None = None
) -> Activity:
    """A running call asks the user (`request`: what, and the schema of the answer); it
    waits `ttl` seconds, its progress data kept beside the request."""
    now = now or clock.now()
    return {
        **activity,
        "status": AWAITING_INPUT,
        "display_message": request.get("message") or "Waiting for your answer",
        "data": {**(activity.get("data") or {}), "type": PROGRESS, "input_request": request},
        "expires_at": _expiry(now, ttl),
    }


def input_given(activity: Activity, response: dict[str, Any]) -> Activity:
    """The user answered: the call runs again, the answer in `data.input_response` for the
    runner to read (it drops both keys when it resumes the call: `resumed`)."""
    data = {k: v for k, v in (activity.get("data") or {}).items() if k != "input_request"}
    return {
        **activity,
        "status": IN_PROGRESS,
        "display_message": INPUT_GIVEN,
        "data": {**data, "type": PROGRESS, "input_response": response},
        "expires_at": None,
    }


def resumed(activity: Activity) -> Activity:
    """The running call's cell once the runner took the answer: request and answer gone."""
    data = {k: v for k, v in (activity.get("data") or {}).items() if k not in INPUT_KEYS}
    return {**activity, "data": data if set(data) - {"type"} else None}


def expired(activity: Activity) -> Activity:
    """Nobody answered in time: the call timed out (an approval is never recorded as a
    denial, a device call as the phone's refusal)."""
    error = {AWAITING_DEVICE: DEVICE_EXPIRED, AWAITING_INPUT: INPUT_EXPIRED}.get(
        str(status_of(activity)), EXPIRED
    )
    return closed(activity, error_type="timeout", error=error)


def expiry_error(activity: Activity) -> tuple[str, str]:
    """(error, error_type) of `expired(activity)`: what the model is told."""
    ended = expired(activity)
    return ended["error"], ended["error_type"]


def closed(
    activity: Activity, *, error_type: str, error: str, now: datetime | None = None
) -> Activity:
    """An open cell whose run ended first (cancel, timeout, crash): failure. Its last
    progress ("Received 29 KB of 293 KB…") no longer holds and goes: the data is the
    error; output it streamed stays, as on every other end."""
    return {
        **activity,
        "status": FAILURE,
        "data": {**error_data(error, error_type), **_streamed(activity)},
        "display_message": None,
        "preview": _error_preview(error),
        "error": error,
        "error_type": error_type,
        "finished_at": _stamp(now),
        "expires_at": None,
    }


def failure_content(error: str, error_type: str, activity: Activity | None = None) -> str:
    """What the model reads for a call that ended without a tool result (the error starts
    with the call, as every error the model reads does)."""
    if activity is not None:
        error = f"{signature_of(activity)}: {error}"
    return json.dumps({"type": "error", "ok": False, "error": error, "error_type": error_type})


def signature_of(activity: Activity) -> str:
    """The cell's call as the model wrote it (preview.call_signature)."""
    return call_signature(str(activity.get("name") or ""), activity.get("input"))
