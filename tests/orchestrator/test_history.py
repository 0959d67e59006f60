"""History rebuild: rows -> the model's conversation, valid for strict providers."""

from __future__ import annotations

from uuid import uuid4

from app.db.models import ThreadMessage
from app.orchestrator.loop.history import to_model_messages


def _row(position: int, role: str, run_id=None, **fields) -> ThreadMessage:
    return ThreadMessage(
        id=uuid4(), thread_id=uuid4(), position=position, seq=position, role=role,
        run_id=run_id, **fields,
    )  # fmt: skip


def _call(call_id: str) -> dict:
    return {"id": call_id, "type": "function", "function": {"name": "tasks", "arguments": "{}"}}


def test_runs_stay_together_and_every_call_gets_an_answer() -> None:
    run1, run2 = uuid4(), uuid4()
    rows = [
        _row(1, "user", run1, content="one"),
        _row(2, "assistant", run1, tool_calls=[_call("a"), _call("b")], is_user_facing=False),
        _row(3, "tool", run1, tool_call_id="a", content='{"ok":true}'),
        _row(4, "user", run2, content="two"),  # posted while run 1 worked
        # b was interrupted: its row has no content, only a failed activity
        _row(5, "tool", run1, tool_call_id="b", tool_activity={"error": "interrupted",
                                                               "error_type": "system_error"}),
        # a specialist's own call: answers no call of this conversation
        _row(6, "tool", run1, tool_call_id="s1", content='{"ok":true}'),
        _row(7, "assistant", run1, content="done one"),
        _row(8, "assistant", run2, content="done two"),
    ]  # fmt: skip
    messages = to_model_messages(rows)
    assert [m["role"] for m in messages] == [
        "user", "assistant", "tool", "tool", "assistant", "user", "assistant",
    ]  # fmt: skip
    assert [m.get("tool_call_id") for m in messages[2:4]] == ["a", "b"]
    assert '"interrupted"' in messages[3]["content"]
    assert messages[5]["content"] == "two"
    assert to_model_messages(rows, until_run=run1)[-1]["content"] == "done one"


def test_a_call_without_any_row_is_answered_as_interrupted() -> None:
    run = uuid4()
    rows = [
        _row(1, "user", run, content="go"),
        _row(2, "assistant", run, tool_calls=[_call("x")]),
    ]
    messages = to_model_messages(rows)
    assert messages[-1]["role"] == "tool" and messages[-1]["tool_call_id"] == "x"
