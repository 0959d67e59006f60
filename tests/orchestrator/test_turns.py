"""Turns through the public API: text, tool calls, parallel calls, errors the model fixes."""

from __future__ import annotations

import json

import pytest

from app.orchestrator.loop import preparing, reply
from tests.orchestrator.support import OrchestratorApi
from tests.support.fake_llm import Call, Text, ToolCalls
from tests.support.result_schemas import assert_matches_result_schema
from tests.support.statements import statements_everywhere

BOTH_DOORS = True  # every test runs through both paths of the model door


async def test_text_turn_streams_into_an_assistant_message(api: OrchestratorApi) -> None:
    api.llm.script(Text("Hello there, how can I help?", pieces=4, pause=0.1))
    thread_id, run = await api.turn("hi")
    assert run["status"] == "completed", run
    assert run["started_at"] and run["finished_at"]
    messages = await api.messages(thread_id)
    assert [m["role"] for m in messages] == ["user", "assistant"]
    assert messages[1]["content"] == "Hello there, how can I help?"
    assert messages[1]["run_id"] == run["id"]
    deltas = [f for _, f in api.frames.frames if type(f).__name__ == "DeltaFrame"]
    # the message was created once the first piece came; the rest streamed as deltas
    assert deltas and all(str(d.message_id) == messages[1]["id"] for d in deltas)
    assert "Hello there, how can I help?".endswith("".join(d.content for d in deltas))
    request = api.llm.requests[0]
    assert request["stream"] is True
    assert request["messages"][-1] == {"role": "user", "content": "hi"}
    assert request["messages"][0]["role"] == "system"


async def test_text_streamed_token_by_token_is_announced_at_most_20_times_a_second(
    api: OrchestratorApi,
) -> None:
    text = "".join(f"w{index} " for index in range(60))
    api.llm.script(Text(text, pieces=60, pause=0.005))  # ~0.3 s, a chunk every 5 ms
    thread_id, run = await api.turn("tell me")
    assert run["status"] == "completed", run
    answer = (await api.messages(thread_id))[-1]
    assert answer["content"] == text
    frames = [f for _, f in api.frames.frames]
    deltas = [f for f in frames if type(f).__name__ == "DeltaFrame"]
    created = next(
        f.message
        for f in frames
        if type(f).__name__ == "MessageFrame" and f.message.role == "assistant"
    )
    # nothing lost, nothing twice: the created message and the deltas make the whole text
    assert created.content + "".join(d.content for d in deltas) == text
    assert 2 <= len(deltas) <= 15  # 60 chunks; at most one frame per 50 ms
    last_delta = max(frames.index(d) for d in deltas)
    final = [
        i
        for i, f in enumerate(frames)
        if type(f).__name__ == "MessageFrame" and str(f.message.id) == answer["id"]
    ]
    assert last_delta < final[-1]  # every delta before the final text


@pytest.fixture
def whole_within_seconds(monkeypatch: pytest.MonkeyPatch) -> None:
    """A stream that ends within the gathering window is written whole. The window is
    30 ms; on a loaded machine litellm's stream of a few chunks may take longer than that
    (then the message is, rightly, shown early): these tests widen it to check the rule,
    not the machine's speed."""
    monkeypatch.setattr(reply, "GATHER_SECONDS", 2.0)
    monkeypatch.setattr(preparing, "GATHER_SECONDS", 2.0)


@pytest.mark.usefixtures("whole_within_seconds")
async def test_a_reply_that_arrives_whole_is_written_once(api: OrchestratorApi) -> None:
    # a short answer from a fast provider, text before tool calls: their streams end at once
    api.llm.script(
        ToolCalls(Call("tasks", {"action": "list"}), text="Let me look."),
        Text("Nothing on your list.", pieces=4),
    )
    thread_id, run = await api.turn("what do I have to do?")
    assert run["status"] == "completed", run
    messages = await api.messages(thread_id)
    assert [m["role"] for m in messages] == ["user", "assistant", "tool", "assistant"]
    # the text that came with the calls is kept, shown, and written with them
    assert messages[1]["content"] == "Let me look."
    assert messages[1]["is_user_facing"] is True
    assert messages[3]["content"] == "Nothing on your list."
    frames = [f for _, f in api.frames.frames]
    assert not [f for f in frames if type(f).__name__ == "DeltaFrame"]
    for message in (messages[1], messages[3]):  # one frame each: never seen half-written
        written = [
            f.message
            for f in frames
            if type(f).__name__ == "MessageFrame" and str(f.message.id) == message["id"]
        ]
        assert [m.content for m in written] == [message["content"]]


@pytest.mark.usefixtures("whole_within_seconds")
async def test_tool_turn_with_arguments_split_across_chunks(api: OrchestratorApi) -> None:
    api.llm.script(
        ToolCalls(Call("tasks", {"action": "create", "title": "Buy milk"}), pieces=5),
        Text("Added it."),
    )
    thread_id, run = await api.turn("remind me to buy milk")
    assert run["status"] == "completed", run
    messages = await api.messages(thread_id)
    assert [m["role"] for m in messages] == ["user", "assistant", "tool", "assistant"]
    assert messages[1]["is_user_facing"] is False
    activity = messages[2]["tool_activity"]
    assert activity["status"] == "success"
    assert activity["input"] == {"action": "create", "title": "Buy milk"}
    assert activity["data"]["task_title"] == "Buy milk"
    assert activity["finished_at"]
    # the cell went through its states: in_progress first, then success
    cells = [
        f.message.tool_activity
        for _, f in api.frames.frames
        if type(f).__name__ == "MessageFrame" and f.message.tool_activity is not None
    ]
    assert [c.status for c in cells] == ["in_progress", "success"]
    # the tool's start message came with the in_progress cell: no progress write of its own
    assert cells[0].display_message == "Creating task…"
    # the model saw its call and the result
    second = api.llm.requests[1]["messages"]
    assert second[-2]["tool_calls"][0]["function"]["name"] == "tasks"
    assert second[-1]["role"] == "tool" and json.loads(second[-1]["content"])["ok"] is True
    tasks = (await api.client.get("/api/tasks", headers=api.headers)).json()
    assert [t["title"] for t in tasks["items"]] == ["Buy milk"]


async def test_offline_demo_model_makes_real_tool_calls(api: OrchestratorApi) -> None:
    agent = await api.add_agent(name="demo", agent_type="assistant", model="demo/tool-demo")
    thread_id = await api.new_thread(agent.id)
    response = await api.post(thread_id, "remind me to water the plants")
    # With the fast door, this may be the process's first call through litellm in full
    # (its lazy imports and first-use schema building): seconds on a loaded machine.
    run = await api.wait_run(thread_id, response.json()["run"]["id"], timeout=60)
    assert run["status"] == "completed", run
    messages = await api.messages(thread_id)
    activity = messages[2]["tool_activity"]
    assert activity["name"] == "tasks" and activity["status"] == "success"
    assert activity["input"] == {"action": "create", "title": "water the plants"}
    assert "water the plants" in messages[-1]["content"]
    _, run = await api.turn("hello", thread_id=thread_id)
    assert "offline demo model" in (await api.messages(thread_id))[-1]["content"]
    assert api.llm.requests == []  # nothing went to the network


async def test_offline_demo_model_searches_without_a_search_service(api: OrchestratorApi) -> None:
    """No WEB_SEARCH_URL: the demo model's "search for …" answers from the offline index."""
    agent = await api.add_agent(name="demo", agent_type="assistant", model="demo/tool-demo")
    thread_id = await api.new_thread(agent.id)
    _, run = await api.turn("search for litestar websockets", thread_id=thread_id)
    assert run["status"] == "completed", run
    [tool] = await api.tool_messages(thread_id)
    activity = tool["tool_activity"]
    assert activity["name"] == "web" and activity["status"] == "success", activity
    assert activity["display_message"] == "1 demo result(s) (offline)"
    assert activity["data"]["results"][0]["title"] == "Litestar documentation"
    assert_matches_result_schema("web", "search", activity["data"])
    answer = (await api.messages(thread_id))[-1]["content"]
    assert answer == "I found: Litestar documentation."
    assert api.llm.requests == []


async def test_a_streamed_replys_message_is_created_by_one_statement(
    api: OrchestratorApi,
) -> None:
    """The first words reach the phone once their message is written: on PostgreSQL that
    write is one statement, without BEGIN and COMMIT round trips around it."""
    api.llm.script(Text("One, two, three, four.", pieces=4, pause=0.1))
    thread_id = await api.new_thread()
    with statements_everywhere() as seen:
        run = (await api.post(thread_id, "count")).json()["run"]
        assert (await api.wait_run(thread_id, run["id"]))["status"] == "completed"
    # per message insert: did it run in a transaction?
    inserts = [not alone for statement, alone in seen if "INSERT INTO thread_messages" in statement]
    answer = (await api.messages(thread_id))[-1]
    assert answer["content"] == "One, two, three, four."
    postgres = api.db.get_bind().dialect.name == "postgresql"
    assert inserts == [True, not postgres]  # the user's message, then the reply's
