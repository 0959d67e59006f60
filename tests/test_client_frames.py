"""A Python app decodes the websocket's frames with the client generated from
openapi/openapi.json (docs/api.md, "Decoding frames in Python"):
`ServerFrameEnvelope.from_dict({"frame": frame}).frame` is the frame's model, and a frame
of a type the app does not know is an `UnknownFrame`, never an exception.

The frames are built from the server's own frame Structs (app/realtime/events.py) and
encoded as the socket encodes them (app/realtime/wire.py)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from types import SimpleNamespace
from typing import Any
from uuid import uuid4

import msgspec

from app.memories.schemas import MemoryRead
from app.realtime import events
from app.realtime.asyncapi import SERVER_FRAMES
from app.tasks.schemas import TaskRead
from app.threads import activity
from app.threads.schemas import RunRead, ThreadMessageRead, ToolActivity
from app.threads.serializers import message_read_of
from app.tools.base import ToolResult
from app.tools.builtin.web import WebSearchHit, WebSearchResult
from tests.support.generated_client import generated, module_of  # noqa: F401

THREAD, MESSAGE = uuid4(), uuid4()
NOW = datetime(2026, 3, 1, 10, 15, 2, tzinfo=UTC)


def _cell(outcome: ToolResult) -> ToolActivity:
    """A finished cell, written as the orchestrator writes it (app/threads/activity.py)."""
    started = activity.started("call_1", "web", {"action": "search", "query": "otters"}, now=NOW)
    return msgspec.convert(activity.finished(started, outcome, now=NOW), ToolActivity)


def _message(role: str, cell: ToolActivity | None = None) -> ThreadMessageRead:
    row = SimpleNamespace(
        id=MESSAGE, thread_id=THREAD, run_id=uuid4(), position=2, parent_id=None,
        sibling_ids=None, seq=7, role=role, content=None if cell else "Hello",
        is_user_facing=True, client_message_id=None, created_at=NOW, updated_at=NOW,
    )  # fmt: skip
    return message_read_of(row, cell)


def _run() -> RunRead:
    usage = {"input_tokens": 10, "output_tokens": 5, "cached_tokens": 0, "reasoning_tokens": 0}
    run = {
        "id": str(uuid4()), "thread_id": str(THREAD), "status": "running", "error": None,
        "trigger_message_id": str(MESSAGE), "created_at": NOW.isoformat(),
        "started_at": NOW.isoformat(), "finished_at": None, "usage": usage,
    }  # fmt: skip
    return msgspec.convert(run, RunRead)


def _task() -> TaskRead:
    return TaskRead(
        id=uuid4(), title="Book dentist", notes=None, status="active", due_at=NOW,
        remind_before_seconds=900, remind_at=NOW, completed_at=None, agent_id=None,
        thread_id=THREAD, created_at=NOW, updated_at=NOW,
    )  # fmt: skip


def _memory() -> MemoryRead:
    return MemoryRead(
        id=uuid4(), key="milk", content="Prefers oat milk", tags=["food"], agent_id=None,
        agent_name=None, created_at=NOW, updated_at=NOW,
    )  # fmt: skip


def server_frames() -> list[events.Frame]:
    """Every kind of frame the server sends, a message frame with a result cell and one
    with a failed cell among them."""
    hits = [WebSearchHit(url="https://otters.example", title="Otters", snippet="…")]
    found = ToolResult.success(WebSearchResult(query="otters", results=hits, total_results=1))
    refused = ToolResult.failure("Unknown action 'serch'.", "validation_error",
                                 allowed_actions=["search", "fetch"])  # fmt: skip
    chunk = {"thread_id": THREAD, "message_id": MESSAGE, "offset": 0, "chunk": '{"qu'}
    return [
        events.MessageFrame(thread_id=THREAD, seq=7, message=_message("assistant")),
        events.MessageFrame(thread_id=THREAD, seq=8, message=_message("tool", _cell(found))),
        events.MessageFrame(thread_id=THREAD, seq=9, message=_message("tool", _cell(refused))),
        events.BranchFrame(
            thread_id=THREAD, seq=10, current_leaf_id=MESSAGE, deleted_message_ids=[uuid4()]
        ),
        events.SubscribedFrame(thread_id=THREAD, last_seq=10),
        events.DeltaFrame(thread_id=THREAD, message_id=MESSAGE, content="Hel"),
        events.ToolOutputFrame(**chunk),
        events.ToolArgumentsFrame(**chunk),
        events.RunFrame(thread_id=THREAD, run=_run(), position=2),
        events.TaskFrame(task=_task()),
        events.ResetFrame(thread_id=THREAD, last_seq=3),
        events.MemoryFrame(change="saved", memory_id=uuid4(), memory=_memory()),
        events.MemoryFrame(change="deleted", memory_id=uuid4()),
        events.PongFrame(),
        events.ErrorFrame(
            error_type="unknown_type",
            error="No such frame type.",
            allowed_types=["subscribe", "unsubscribe", "ping"],
        ),
    ]


def _as_sent(frame: events.Frame) -> dict[str, Any]:
    return json.loads(msgspec.json.encode(frame))


def _decode(package: str, frame: dict[str, Any]) -> Any:
    envelope = module_of(package, "models").ServerFrameEnvelope
    return envelope.from_dict({"frame": frame}).frame


def test_the_frames_here_are_every_kind_the_server_sends() -> None:
    assert {type(f) for f in server_frames()} == set(SERVER_FRAMES)


def test_every_server_frame_decodes_into_its_model(generated: str) -> None:  # noqa: F811
    models = module_of(generated, "models")
    for frame in server_frames():
        sent = _as_sent(frame)
        decoded = _decode(generated, sent)
        assert type(decoded).__name__ == type(frame).__name__, sent
        assert decoded.type_ == sent["type"]
        assert decoded.to_dict()["type"] == sent["type"]
        if isinstance(frame, events.MessageFrame) and frame.message.tool_activity:
            data = decoded.message.tool_activity.data
            expected = {"success": models.WebSearchResult, "failure": models.ToolError}
            assert isinstance(data, expected[frame.message.tool_activity.status])


def test_a_frame_from_a_newer_server_decodes_into_the_fallback(generated: str) -> None:  # noqa: F811
    newer = {"type": "from_the_future", "thread_id": str(THREAD), "gizmo": {"size": 3}}
    decoded = _decode(generated, newer)
    assert type(decoded).__name__ == "UnknownFrame"
    assert decoded.type_ == "from_the_future"
    assert decoded["gizmo"] == {"size": 3} and decoded.to_dict() == newer
    # a known frame with a key added later is still its own model
    pong = _decode(generated, {"type": "pong", "added_later": True})
    assert type(pong).__name__ == "PongFrame"
