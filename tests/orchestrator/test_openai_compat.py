"""`/v1` with the official `openai` client over real HTTP: models, completions (plain and
streamed) that run the agent through the runner, with their trace and tool cells."""

from __future__ import annotations

import json
from uuid import uuid4

import openai
import pytest

from tests.orchestrator.support import OrchestratorApi
from tests.support.fake_llm import Call, Error, Text, ToolCalls


def trace_of(completion: openai.types.chat.ChatCompletion) -> dict:
    return completion.choices[0].message.model_extra["metadata"]


async def test_models_are_the_callers_agents(
    api: OrchestratorApi, openai_client: openai.AsyncOpenAI
) -> None:
    other = await api.add_agent(name="Researcher", agent_type="specialist")
    models = await openai_client.models.list()
    by_id = {m.id: m for m in models.data}
    assert set(by_id) == {str(api.user.agent.id), str(other.id)}
    assert by_id[str(other.id)].model_extra["name"] == "Researcher"
    assert by_id[str(other.id)].owned_by == "you"


async def test_a_completion_runs_the_agent_with_its_tool_cells(
    api: OrchestratorApi, openai_client: openai.AsyncOpenAI
) -> None:
    api.llm.script(
        ToolCalls(Call("test_echo", {"action": "echo", "text": "hi"}), text="Let me echo. "),
        Text("Echoed hi."),
    )
    completion = await openai_client.chat.completions.create(
        model=str(api.user.agent.id),
        messages=[
            {"role": "system", "content": "ignored"},
            {"role": "user", "content": "earlier question"},
            {"role": "assistant", "content": "earlier answer"},
            {"role": "user", "content": "echo hi"},
        ],
    )
    assert completion.object == "chat.completion"
    assert completion.choices[0].finish_reason == "stop"
    assert completion.choices[0].message.content == "Let me echo. \n\nEchoed hi."
    trace = trace_of(completion)
    assert trace["run_status"] == "completed"
    [result] = trace["tool_results"]
    assert result["name"] == "test_echo" and result["status"] == "success"
    assert result["input"] == {"action": "echo", "text": "hi"}
    assert result["data"] == {"text": "hi"} and result["error"] is None
    assert [(s["action"], s["status"]) for s in trace["steps"]] == [
        ("tool", "ok"),
        ("completion", "ok"),
    ]
    # the same run the app sees: a new thread, the earlier turns stored, a tool cell
    run = await api.get_run(trace["thread_id"], trace["run_id"])
    assert run["status"] == "completed"
    rows = await api.messages(trace["thread_id"])
    assert [(m["role"], m["content"]) for m in rows[:3]] == [
        ("user", "earlier question"),
        ("assistant", "earlier answer"),
        ("user", "echo hi"),
    ]
    [cell] = [m["tool_activity"] for m in rows if m["role"] == "tool"]
    assert cell["status"] == "success" and cell["id"] == result["tool_call_id"]
    model_saw = api.llm.requests[0]["messages"]
    assert [m["role"] for m in model_saw] == ["system", "user", "assistant", "user"]
    assert model_saw[0]["content"] != "ignored"


async def test_a_streamed_completion_sends_chunks_then_the_trace(
    api: OrchestratorApi, openai_client: openai.AsyncOpenAI
) -> None:
    api.llm.script(Text("Streaming works fine.", pieces=4))
    stream = await openai_client.chat.completions.create(
        model=str(api.user.agent.id),
        messages=[{"role": "user", "content": "stream please"}],
        stream=True,
    )
    chunks = [chunk async for chunk in stream]
    assert all(c.object == "chat.completion.chunk" for c in chunks)
    first, last = chunks[0].choices[0], chunks[-1].choices[0]
    assert first.delta.role == "assistant"
    where = first.delta.model_extra["metadata"]
    assert "".join(c.choices[0].delta.content or "" for c in chunks) == "Streaming works fine."
    assert last.finish_reason == "stop"
    trace = last.delta.model_extra["metadata"]
    assert (trace["thread_id"], trace["run_id"]) == (where["thread_id"], where["run_id"])
    assert trace["run_status"] == "completed" and trace["tool_results"] == []
    rows = await api.messages(trace["thread_id"])
    assert rows[-1]["role"] == "assistant" and rows[-1]["content"] == "Streaming works fine."


async def test_request_metadata_narrows_tools_and_runs_calls_first(
    api: OrchestratorApi, openai_client: openai.AsyncOpenAI
) -> None:
    api.llm.script(Text("Done."))
    completion = await openai_client.chat.completions.create(
        model=str(api.user.agent.id),
        messages=[{"role": "user", "content": "go"}],
        metadata={  # type: ignore[arg-type]  (OpenAI types metadata as str -> str)
            "tools": ["tasks", "test_echo"],
            "tool_calls": [
                "tasks",
                {"name": "test_echo", "args": {"action": "echo", "text": "pre"}},
                "test_echo",
            ],
        },
    )
    results = trace_of(completion)["tool_results"]
    assert [(r["name"], r["status"]) for r in results] == [
        ("tasks", "success"),
        ("test_echo", "success"),
        ("test_echo", "failure"),
    ]
    assert results[0]["input"] == {"action": "list"}
    assert "echo (text)" in results[2]["error"]
    offered = [t["function"]["name"] for t in api.llm.requests[0]["tools"]]
    assert offered == ["tasks", "test_echo"]


async def test_metadata_as_strings_for_clients_that_send_only_strings(
    api: OrchestratorApi, openai_client: openai.AsyncOpenAI
) -> None:
    api.llm.script(Text("Done."))
    completion = await openai_client.chat.completions.create(
        model=str(api.user.agent.id),
        messages=[{"role": "user", "content": "go"}],
        metadata={"tools": "tasks", "tool_calls": json.dumps(["tasks"])},
    )
    assert [r["name"] for r in trace_of(completion)["tool_results"]] == ["tasks"]
    assert [t["function"]["name"] for t in api.llm.requests[0]["tools"]] == ["tasks"]


async def test_a_bare_tool_call_name_and_a_call_outside_the_allow_list(
    api: OrchestratorApi, openai_client: openai.AsyncOpenAI
) -> None:
    """`metadata.tool_calls: "tasks"` is a call by name like `metadata.tools: "tasks"`; a
    pre-flight call of a tool the request's `tools` leaves out is not allowed (not unknown)."""
    api.llm.script(Text("Done."), Text("Done again."))
    completion = await openai_client.chat.completions.create(
        model=str(api.user.agent.id),
        messages=[{"role": "user", "content": "go"}],
        metadata={"tool_calls": "tasks"},
    )
    [listed] = trace_of(completion)["tool_results"]
    assert (listed["name"], listed["status"]) == ("tasks", "success")
    assert listed["input"] == {"action": "list"}
    completion = await openai_client.chat.completions.create(
        model=str(api.user.agent.id),
        messages=[{"role": "user", "content": "go"}],
        metadata={  # type: ignore[arg-type]
            "tools": ["tasks"],
            "tool_calls": [{"name": "test_echo", "args": {"action": "echo", "text": "x"}}],
        },
    )
    [refused] = trace_of(completion)["tool_results"]
    assert refused["status"] == "failure" and refused["error_type"] == "permission_error"
    assert refused["error"] == "'test_echo' is not allowed for this request."
    assert refused["input"] == {"action": "echo", "text": "x"}
    [read] = [m for m in api.llm.requests[-1]["messages"] if m["role"] == "tool"]
    assert json.loads(read["content"])["available_tools"] == ["tasks"]
    # an unknown name stays unknown
    api.llm.script(Text("Done."))
    completion = await openai_client.chat.completions.create(
        model=str(api.user.agent.id),
        messages=[{"role": "user", "content": "go"}],
        metadata={"tool_calls": "no_such_tool"},
    )
    [unknown] = trace_of(completion)["tool_results"]
    assert unknown["error"] == "Unknown tool 'no_such_tool'."


async def test_a_completion_continues_an_owned_thread(
    api: OrchestratorApi, openai_client: openai.AsyncOpenAI
) -> None:
    api.llm.script(Text("First."), Text("Second."))
    model = str(api.user.agent.id)
    first = await openai_client.chat.completions.create(
        model=model, messages=[{"role": "user", "content": "one"}]
    )
    thread_id = trace_of(first)["thread_id"]
    second = await openai_client.chat.completions.create(
        model=model,
        messages=[{"role": "user", "content": "not stored"}, {"role": "user", "content": "two"}],
        metadata={"thread_id": thread_id},
    )
    assert trace_of(second)["thread_id"] == thread_id
    model_saw = [(m["role"], m["content"]) for m in api.llm.requests[1]["messages"][1:]]
    assert model_saw == [("user", "one"), ("assistant", "First."), ("user", "two")]


async def test_errors_are_in_openais_shape(
    api: OrchestratorApi, openai_client: openai.AsyncOpenAI, openai_base_url: str
) -> None:
    model = str(api.user.agent.id)
    user_says = [{"role": "user", "content": "hi"}]
    with pytest.raises(openai.NotFoundError) as unknown_thread:
        await openai_client.chat.completions.create(
            model=model, messages=user_says, metadata={"thread_id": str(uuid4())}
        )
    assert unknown_thread.value.body["type"] == "invalid_request_error"
    with pytest.raises(openai.NotFoundError) as unknown_model:
        await openai_client.chat.completions.create(model="nobody", messages=user_says)
    assert unknown_model.value.code == "model_not_found"
    with pytest.raises(openai.BadRequestError) as no_user_message:
        await openai_client.chat.completions.create(
            model=model, messages=[{"role": "system", "content": "x"}]
        )
    assert no_user_message.value.param == "messages"
    with pytest.raises(openai.BadRequestError) as coerced:  # JSON's types: no 0 for false
        await openai_client.chat.completions.create(
            model=model, messages=user_says, extra_body={"stream": 0}
        )
    assert coerced.value.body["type"] == "invalid_request_error"
    assert "stream" in coerced.value.message
    async with openai.AsyncOpenAI(
        base_url=openai_base_url, api_key="wrong", max_retries=0
    ) as intruder:
        with pytest.raises(openai.AuthenticationError) as refused:
            await intruder.models.list()
    assert refused.value.code == "invalid_api_key"
    assert refused.value.response.headers["x-should-retry"] == "false"


async def test_a_thread_of_another_user_is_not_found(
    api: OrchestratorApi, openai_client: openai.AsyncOpenAI
) -> None:
    from tests.conftest import make_api_user

    stranger = await make_api_user(api.db)
    await api.db.commit()
    response = await api.client.post(
        "/api/threads", json={"agent_id": str(stranger.agent.id)}, headers=stranger.headers
    )
    foreign_thread = response.json()["id"]
    with pytest.raises(openai.NotFoundError):
        await openai_client.chat.completions.create(
            model=str(api.user.agent.id),
            messages=[{"role": "user", "content": "hi"}],
            metadata={"thread_id": foreign_thread},
        )


async def test_a_failed_run_answers_a_server_error(
    api: OrchestratorApi, openai_client: openai.AsyncOpenAI
) -> None:
    api.llm.script(*[Error(400, "the model refused")] * 3)
    with pytest.raises(openai.InternalServerError) as failed:
        await openai_client.chat.completions.create(
            model=str(api.user.agent.id), messages=[{"role": "user", "content": "hi"}]
        )
    assert failed.value.code == "run_failed"
    assert failed.value.body["message"].startswith("The run failed: ")
    run = await api.get_run(failed.value.body["thread_id"], failed.value.body["run_id"])
    assert run["status"] == "failed"
