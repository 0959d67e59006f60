"""Cells from the model's first token (issue 40, item 6): a call's cell appears as the model
begins writing it (`preparing`), its arguments stream as `tool_arguments` frames, and the
same message then goes on as every call does (in_progress or a wait, then its end)."""

from __future__ import annotations

import json
from typing import Any

from app.realtime.events import Frame, MessageFrame, ToolArgumentsFrame
from tests.orchestrator.support import OrchestratorApi
from tests.support.fake_llm import Call, Text, ToolCalls

BOTH_DOORS = True  # ours and litellm's stream the arguments alike

NOTE = {"action": "echo", "text": "A long note the model takes a while to write, " * 3}


def _tool_frames(api: OrchestratorApi) -> list[Frame]:
    """The frames of tool cells and of their arguments, in the order published."""
    return [
        frame
        for _, frame in api.frames.frames
        if isinstance(frame, ToolArgumentsFrame)
        or (isinstance(frame, MessageFrame) and frame.message.tool_activity is not None)
    ]


def _statuses(api: OrchestratorApi, message_id: Any) -> list[str]:
    return [
        frame.message.tool_activity.status
        for frame in _tool_frames(api)
        if isinstance(frame, MessageFrame) and str(frame.message.id) == str(message_id)
    ]


def _arguments(api: OrchestratorApi, message_id: Any) -> list[ToolArgumentsFrame]:
    return [
        frame
        for frame in _tool_frames(api)
        if isinstance(frame, ToolArgumentsFrame) and str(frame.message_id) == str(message_id)
    ]


def _joined(frames: list[ToolArgumentsFrame]) -> str:
    text = ""
    for frame in frames:
        assert frame.offset == len(text), [(f.offset, f.chunk) for f in frames]
        text += frame.chunk
    return text


async def test_the_cell_appears_while_the_model_writes_the_call(api: OrchestratorApi) -> None:
    api.llm.script(
        ToolCalls(Call("test_echo", NOTE, id="call_note"), pieces=5, pause=0.12),
        Text("Noted."),
    )
    thread_id = await api.new_thread()
    run_id = (await api.post(thread_id, "note this")).json()["run"]["id"]
    preparing = await api.wait_activity("preparing", "test_echo")
    # the model has not finished: the call is neither planned nor run yet
    assert preparing["tool_activity"]["display_message"] == "Preparing test_echo…"
    assert preparing["tool_activity"]["input"] is None
    assert preparing["tool_activity"]["id"] == "call_note"
    assert len(api.llm.requests) == 1
    run = await api.wait_run(thread_id, run_id)
    assert run["status"] == "completed", run

    message_id = preparing["id"]
    statuses = _statuses(api, message_id)
    assert statuses[:2] == ["preparing", "in_progress"] and statuses[-1] == "success", statuses
    # the arguments came in pieces while the cell was preparing, the last before it ran
    pieces = _arguments(api, message_id)
    assert len(pieces) >= 2, pieces
    assert json.loads(_joined(pieces)) == NOTE
    frames = _tool_frames(api)
    first = frames.index(next(f for f in frames if isinstance(f, MessageFrame)))
    running = next(
        i for i, f in enumerate(frames)
        if isinstance(f, MessageFrame) and f.message.tool_activity.status == "in_progress"
    )  # fmt: skip
    assert all(first < frames.index(p) < running for p in pieces)
    pieces_after_cell = [p for p in pieces if p.offset > 0]
    assert pieces_after_cell, "no argument arrived after the cell: it came too late"

    # one message per call, after the assistant message carrying it
    messages = await api.messages(thread_id)
    assert [m["role"] for m in messages] == ["user", "assistant", "tool", "assistant"]
    assistant, tool = messages[1], messages[2]
    assert tool["id"] == str(message_id) and tool["tool_activity"]["id"] == "call_note"
    assert assistant["position"] < tool["position"]
    assert assistant["content"] is None and assistant["is_user_facing"] is False
    activity = tool["tool_activity"]
    assert activity["status"] == "success" and activity["input"] == NOTE
    # the model read the result, answering the call it made
    sent = api.llm.requests[1]["messages"]
    assert [m["role"] for m in sent[-2:]] == ["assistant", "tool"]
    assert sent[-2]["tool_calls"][0]["id"] == "call_note"
    assert json.loads(sent[-2]["tool_calls"][0]["function"]["arguments"]) == NOTE
    assert sent[-1]["tool_call_id"] == "call_note"


async def test_text_before_the_calls_stays_in_the_same_assistant_message_before_the_cells(
    api: OrchestratorApi,
) -> None:
    api.llm.script(
        ToolCalls(
            Call("test_echo", {"action": "echo", "text": "one"}, id="call_one"),
            Call("test_echo", {"action": "echo", "text": "two"}, id="call_two"),
            text="Let me write two notes.",
            pieces=3,
            pause=0.08,
        ),
        Text("Both written."),
    )
    thread_id, run = await api.turn("two notes")
    assert run["status"] == "completed", run
    messages = await api.messages(thread_id)
    assert [m["role"] for m in messages] == ["user", "assistant", "tool", "tool", "assistant"]
    assert messages[1]["content"] == "Let me write two notes."
    assert [m["position"] for m in messages] == sorted(m["position"] for m in messages)
    one, two = messages[2:4]
    assert [t["tool_activity"]["id"] for t in (one, two)] == ["call_one", "call_two"]
    # the first call's cell came as it began; the second, begun after that turn's one
    # write of cells, came with the turn's record
    statuses = _statuses(api, one["id"])
    assert statuses[0] == "preparing" and statuses[-1] == "success", statuses
    assert json.loads(_joined(_arguments(api, one["id"]))) == {"action": "echo", "text": "one"}
    statuses = _statuses(api, two["id"])
    assert statuses[0] == "in_progress" and statuses[-1] == "success", statuses
    assert _arguments(api, two["id"]) == []
    assistant_frames = [
        f.message
        for _, f in api.frames.frames
        if isinstance(f, MessageFrame) and f.message.role == "assistant"
    ]
    assert len({m.id for m in assistant_frames}) == 2  # the calls' message and the answer
    sent = api.llm.requests[1]["messages"]
    assert sent[-3]["content"] == "Let me write two notes."
    assert [c["id"] for c in sent[-3]["tool_calls"]] == ["call_one", "call_two"]


async def test_an_approval_waits_in_the_prepared_cell(api: OrchestratorApi) -> None:
    api.llm.script(
        ToolCalls(Call("test_confirm", {"action": "do", "note": "careful"}), pause=0.08),
        Text("Done."),
    )
    thread_id = await api.new_thread()
    run_id = (await api.post(thread_id, "do it")).json()["run"]["id"]
    preparing = await api.wait_activity("preparing", "test_confirm")
    waiting = await api.wait_activity("awaiting_approval", "test_confirm")
    assert waiting["id"] == preparing["id"]
    assert waiting["tool_activity"]["started_at"] == preparing["tool_activity"]["started_at"]
    decided = await api.decide(thread_id, waiting["id"], approve=True)
    assert decided.status_code == 200, decided.text
    run = await api.wait_run(thread_id, run_id)
    assert run["status"] == "completed", run
    [tool] = await api.tool_messages(thread_id)
    assert tool["id"] == preparing["id"] and tool["tool_activity"]["status"] == "success"


async def test_a_cancel_while_preparing_ends_the_cell_cancelled_once(
    api: OrchestratorApi,
) -> None:
    api.llm.script(
        ToolCalls(Call("test_echo", NOTE, id="call_cut"), pieces=6, pause=0.1, hang_after=True),
        Text("Answered after the cancel."),
    )
    thread_id = await api.new_thread()
    run_id = (await api.post(thread_id, "note this")).json()["run"]["id"]
    preparing = await api.wait_activity("preparing", "test_echo")
    cancel = await api.client.post(
        f"/api/threads/{thread_id}/runs/{run_id}/cancel", headers=api.headers
    )
    assert cancel.status_code == 200
    run = await api.wait_run(thread_id, run_id, timeout=3)
    assert run["status"] == "cancelled"
    statuses = _statuses(api, preparing["id"])
    assert statuses == ["preparing", "failure"], statuses
    [tool] = await api.tool_messages(thread_id)
    assert tool["id"] == preparing["id"]
    assert tool["tool_activity"]["error_type"] == "cancelled"

    # the conversation stays valid: the next turn's model sees the call and its end
    _, after = await api.turn("and now?", thread_id)
    assert after["status"] == "completed", after
    sent = api.llm.requests[-1]["messages"]
    calls = [m for m in sent if m.get("tool_calls")]
    assert [c["id"] for m in calls for c in m["tool_calls"]] == ["call_cut"]
    answers = [m for m in sent if m["role"] == "tool"]
    assert [m["tool_call_id"] for m in answers] == ["call_cut"]
    assert json.loads(answers[0]["content"])["error_type"] == "cancelled"


async def test_calls_that_come_whole_write_no_preparing_cell(
    api: OrchestratorApi, door: str
) -> None:
    api.llm.script(ToolCalls(Call("test_echo", {"action": "echo", "text": "x"})), Text("ok"))
    thread_id, run = await api.turn("quick")
    assert run["status"] == "completed", run
    if door == "fast":  # one read of the wire: the stream ended before a cell was due
        [tool] = await api.tool_messages(thread_id)
        statuses = _statuses(api, tool["id"])
        assert statuses[0] == "in_progress" and "preparing" not in statuses, statuses
        assert not any(isinstance(f, ToolArgumentsFrame) for _, f in api.frames.frames)
