"""What the phone receives: APNs payloads for alerts and Live Activities (pure functions).

The iOS app's contract (docs/api.md, "Push notifications"): every alert carries `kind`,
`thread_id`, `run_id`, `message_id` and `seq` at the top level, so the app syncs the
thread with `after_seq` and loses nothing; text the app should word in the user's
language is a localization key with arguments (`loc-key`/`loc-args`, keys in the app's
Localizable.strings); the start of an answer is sent as it is. A time the app reads is
`YYYY-MM-DDTHH:MM:SSZ`, as in every REST body and frame (Swift's `.iso8601` strategy
rejects fractional seconds); APNs' own `aps` times are epoch seconds, as Apple requires.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

from app.lib.schema import served_timestamp

# Categories the app registers (UNNotificationCategory) to offer actions.
APPROVAL_CATEGORY = "APPROVAL_REQUEST"  # actions: approve / deny (POST …/approval)
DEVICE_CATEGORY = "DEVICE_REQUEST"  # opens the app so it runs the device tool
INPUT_CATEGORY = "INPUT_REQUEST"  # opens the app to answer a tool's question (…/input)
# status -> (category, payload kind); anything else waiting is an approval
WAIT_KINDS = {
    "awaiting_device": (DEVICE_CATEGORY, "device_request"),
    "awaiting_input": (INPUT_CATEGORY, "input_request"),
}
# actions: complete, snooze_10m, snooze_1h, snooze_tomorrow (POST /api/tasks/{id}/reminder-answer)
REMINDER_CATEGORY = "TASK_REMINDER"
SCHEDULE_CATEGORY = (
    "SCHEDULE_PAUSED"  # opens the schedule (resume: POST /api/schedules/{id}/resume)
)
ANSWER_CATEGORY = "RUN_COMPLETED"
FAILURE_CATEGORY = "RUN_FAILED"

BODY_CHARS = 180  # the start of the answer: a lock-screen alert shows about this much
ANSWER_TTL_SECONDS = 24 * 3600
LIVE_ACTIVITY_UPDATE_TTL_SECONDS = 3600
LIVE_ACTIVITY_END_TTL_SECONDS = 4 * 3600


@dataclass(frozen=True, slots=True)
class Alert:
    """An alert's APNs fields, before it is addressed to a device."""

    payload: dict[str, Any]
    collapse_id: str
    expiration: int
    priority: int = 10


def collapse_id(thread_id: UUID) -> str:
    """One notification per thread on the lock screen: a newer one replaces it."""
    return f"thread-{thread_id}"


def _ids(thread_id: UUID, run_id: UUID | None, message_id: UUID | None, seq: int | None):
    return {
        "thread_id": str(thread_id),
        "run_id": str(run_id) if run_id else None,
        "message_id": str(message_id) if message_id else None,
        "seq": seq,
    }


def _start_of(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= BODY_CHARS else text[: BODY_CHARS - 1].rstrip() + "…"


def _thread_alert(
    thread_id: UUID,
    category: str,
    alert: dict[str, Any],
    fields: dict[str, Any],
    *,
    expiration: int,
    time_sensitive: bool = False,
) -> Alert:
    """An alert about a thread: grouped by it (`thread-id`), and a newer one replaces it
    (`collapse_id`); `fields` (its `kind` first) sit beside `aps` at the top level."""
    aps: dict[str, Any] = {
        "alert": alert,
        "sound": "default",
        "thread-id": str(thread_id),
        "category": category,
    }
    if time_sensitive:
        aps["interruption-level"] = "time-sensitive"
    return Alert(
        payload={"aps": aps, **fields}, collapse_id=collapse_id(thread_id), expiration=expiration
    )


def run_completed(
    *,
    thread_id: UUID,
    run_id: UUID,
    message_id: UUID | None,
    seq: int | None,
    title: str,
    answer: str | None,
) -> Alert:
    if answer and answer.strip():
        alert: dict[str, Any] = {"title": title, "body": _start_of(answer)}
    else:  # an answer without text (only tool calls): the app words it
        alert = {"title": title, "loc-key": "RUN_COMPLETED_BODY", "loc-args": [title]}
    fields = {"kind": "run_completed", **_ids(thread_id, run_id, message_id, seq)}
    expiration = int(time.time()) + ANSWER_TTL_SECONDS
    return _thread_alert(thread_id, ANSWER_CATEGORY, alert, fields, expiration=expiration)


def run_failed(
    *, thread_id: UUID, run_id: UUID, seq: int | None, title: str, error: str | None
) -> Alert:
    alert = {"title": title, "loc-key": "RUN_FAILED_BODY", "loc-args": [title]}
    fields = {"kind": "run_failed", "error": error, **_ids(thread_id, run_id, None, seq)}
    expiration = int(time.time()) + ANSWER_TTL_SECONDS
    return _thread_alert(thread_id, FAILURE_CATEGORY, alert, fields, expiration=expiration)


def tool_waiting(
    *,
    thread_id: UUID,
    run_id: UUID | None,
    message_id: UUID,
    seq: int | None,
    title: str,
    status: str,
    tool_name: str,
    expires_at: datetime | None,
    reminder: bool = False,
) -> Alert:
    """A time-sensitive alert: a tool call waits for the user (approval, the device, or an
    answer to its question);
    a `reminder` recalls one still waiting before it expires (its own body key)."""
    key, kind = WAIT_KINDS.get(status, (APPROVAL_CATEGORY, "approval_request"))
    alert = {
        "title-loc-key": f"{key}_TITLE",
        "title-loc-args": [title],
        "loc-key": f"{key}_REMINDER_BODY" if reminder else f"{key}_BODY",
        "loc-args": [tool_name, title],
    }
    fields = {
        "kind": kind,
        "tool_name": tool_name,
        "reminder": reminder,
        "expires_at": served_timestamp(expires_at) if expires_at else None,
        **_ids(thread_id, run_id, message_id, seq),
    }
    # Past its expiry the request is void: APNs must not deliver it late.
    expiration = int(expires_at.timestamp()) if expires_at else int(time.time()) + 600
    return _thread_alert(thread_id, key, alert, fields, expiration=expiration, time_sensitive=True)


def task_reminder(
    *,
    task_id: UUID,
    title: str,
    due_at: datetime | None,
    remind_at: datetime,
    late: bool,
    thread_id: UUID | None,
    expiration: int,
) -> Alert:
    """A task's reminder: time-sensitive, one per task on the lock screen (a snooze's
    replaces the first), grouped under `tasks`; `late` when the server was down over its
    time (the app may say "was due at …")."""
    # The body is the app's words; a service extension may put the local due time in it.
    body_key = "TASK_REMINDER_LATE_BODY" if late else "TASK_REMINDER_BODY"
    alert = {"title": title, "loc-key": body_key}
    aps: dict[str, Any] = {
        "alert": alert,
        "sound": "default",
        "thread-id": "tasks",
        "category": REMINDER_CATEGORY,
        "interruption-level": "time-sensitive",
    }
    fields = {
        "kind": "task_reminder",
        "task_id": str(task_id),
        "due_at": served_timestamp(due_at) if due_at else None,
        "remind_at": served_timestamp(remind_at),
        "late": late,
        "thread_id": str(thread_id) if thread_id else None,
    }
    payload = {"aps": aps, **fields}
    return Alert(payload=payload, collapse_id=f"task-{task_id}", expiration=expiration)


def schedule_paused(*, thread_id: UUID, schedule_id: str, seq: int, title: str) -> Alert:
    """A schedule on the thread was paused because its runs kept failing."""
    alert = {"title": title, "loc-key": "SCHEDULE_PAUSED_BODY", "loc-args": [title]}
    fields = {
        "kind": "schedule_paused",
        "schedule_id": schedule_id,
        **_ids(thread_id, None, None, seq),
    }
    expiration = int(time.time()) + ANSWER_TTL_SECONDS
    return _thread_alert(thread_id, SCHEDULE_CATEGORY, alert, fields, expiration=expiration)


def test_alert() -> dict[str, Any]:
    return {"aps": {"alert": {"loc-key": "PUSH_TEST_BODY"}, "sound": "default"}, "kind": "test"}


# -- Live Activities ------------------------------------------------------------------
def live_activity_topic(bundle_id: str) -> str:
    return f"{bundle_id}.push-type.liveactivity"


def live_activity(
    event: str, content_state: dict[str, Any], *, dismissal_date: int | None = None
) -> dict[str, Any]:
    """ActivityKit decodes `content-state` into the widget's ContentState (camelCase keys,
    as a Swift Codable struct has them)."""
    aps: dict[str, Any] = {
        "timestamp": int(time.time()),
        "event": event,
        "content-state": content_state,
    }
    if dismissal_date is not None:
        aps["dismissal-date"] = dismissal_date
    return {"aps": aps}


# The app's ActivityAttributes struct: push-to-start names it, ActivityKit decodes
# `attributes` into it (camelCase keys, as the Swift struct has them).
LIVE_ACTIVITY_ATTRIBUTES_TYPE = "RunActivityAttributes"


def live_activity_start(
    content_state: dict[str, Any], *, thread_id: UUID, run_id: UUID, title: str
) -> dict[str, Any]:
    """Push-to-start (iOS 17.2+): the phone starts a Live Activity for a run it did not
    start; the app then registers the new activity's token for that run
    (`POST /api/threads/{threadId}/runs/{runId}/live-activity`)."""
    payload = live_activity("start", content_state)
    payload["aps"] |= {
        "attributes-type": LIVE_ACTIVITY_ATTRIBUTES_TYPE,
        "attributes": {"threadId": str(thread_id), "runId": str(run_id), "title": title},
        "alert": {"title": title, "loc-key": "LIVE_ACTIVITY_START_BODY", "loc-args": [title]},
    }
    return payload
