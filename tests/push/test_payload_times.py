"""Every push payload builder writes times as REST bodies and frames do: whole seconds, `Z`
(Swift's `.iso8601` decoding strategy rejects anything else)."""

from __future__ import annotations

import inspect
import re
import typing
from datetime import UTC, datetime
from typing import Any

import msgspec
from uuid_utils.compat import uuid7

from app.lib.schema import Schema, served_timestamp
from app.push import payloads

WHOLE_SECONDS = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")
ISO_LIKE = re.compile(r"^\d{4}-\d\d-\d\dT")
# Sub-second and not UTC: what a builder must not pass through as it is.
LOCAL = datetime(2026, 11, 26, 14, 19, 52, 64652, tzinfo=UTC).astimezone()
# APNs' own `aps` times are epoch seconds (Apple's format, not the app's).
EPOCH_KEYS = {"timestamp", "dismissal-date", "stale-date"}


def _sample(annotation: Any, name: str) -> Any:
    """An argument for a builder's parameter, with a datetime wherever one may go."""
    text = str(annotation)
    if "datetime" in text:
        return LOCAL
    if "UUID" in text:
        return uuid7()
    if "dict" in text:  # a Live Activity's content-state: durations, no dates (ActivityKit
        # decodes a Date there as seconds since 2001, not as text)
        return {"status": "running", "elapsedSeconds": 3}
    if "int" in text:
        return 1
    if "bool" in text:
        return True
    return "awaiting_approval" if name == "status" else f"a {name}"


def _builders() -> list[Any]:
    """Every public function of app/push/payloads.py that builds a payload."""
    found = []
    for name, function in inspect.getmembers(payloads, inspect.isfunction):
        if function.__module__ != payloads.__name__ or name.startswith("_"):
            continue
        returns = typing.get_type_hints(function).get("return")
        if returns in (payloads.Alert, dict[str, Any]):
            found.append(function)
    return found


def _built(function: Any) -> dict[str, Any]:
    hints = typing.get_type_hints(function)
    parameters = inspect.signature(function).parameters
    args = {
        name: _sample(hints.get(name), name)
        for name, parameter in parameters.items()
        if parameter.default is inspect.Parameter.empty or "date" in name or name.endswith("_at")
    }
    built = function(**args)
    payload = built.payload if isinstance(built, payloads.Alert) else built
    # What goes on the wire: msgspec encodes the stored payload (app/push/apns.py).
    return msgspec.json.decode(msgspec.json.encode(payload))


def _times(node: Any, key: str = "") -> list[tuple[str, Any]]:
    if isinstance(node, dict):
        return [pair for k, v in node.items() for pair in _times(v, k)]
    if isinstance(node, list):
        return [pair for v in node for pair in _times(v, key)]
    if key in EPOCH_KEYS or (isinstance(node, str) and ISO_LIKE.match(node)):
        return [(key, node)]
    return []


def test_every_payload_builder_writes_whole_second_utc_times() -> None:
    builders = _builders()
    assert {b.__name__ for b in builders} >= {"run_completed", "tool_waiting", "live_activity"}
    seen = 0
    for builder in builders:
        for key, value in _times(_built(builder)):
            seen += 1
            if key in EPOCH_KEYS:
                assert isinstance(value, int), (builder.__name__, key, value)
            else:
                assert WHOLE_SECONDS.match(value), (builder.__name__, key, value)
    assert seen >= 2  # an approval's expiry, a Live Activity's timestamp at least


def test_hand_written_times_match_what_structs_serve() -> None:
    class Served(Schema):
        at: datetime

    encoded = msgspec.json.decode(msgspec.json.encode(Served(at=LOCAL)))["at"]
    assert served_timestamp(LOCAL) == encoded == "2026-11-26T14:19:52Z"


def test_a_question_from_a_tool_opens_the_app_to_answer_it() -> None:
    """`awaiting_input` (an MCP server asks the user): its own category, not an approval's
    approve/deny actions (which would answer 409)."""
    ids = {"thread_id": uuid7(), "run_id": uuid7(), "message_id": uuid7(), "seq": 3}
    alert = payloads.tool_waiting(
        **ids, title="Chat", status="awaiting_input", tool_name="t__book", expires_at=None
    )
    assert alert.payload["kind"] == "input_request"
    assert alert.payload["aps"]["category"] == payloads.INPUT_CATEGORY == "INPUT_REQUEST"
    assert alert.payload["aps"]["alert"]["loc-key"] == "INPUT_REQUEST_BODY"
