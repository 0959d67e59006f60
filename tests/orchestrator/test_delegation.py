"""Delegation through the public API: enabled/disabled specialists, their tool
descriptions, unknown ones, chaining up to the depth limit, and the timeout."""

from __future__ import annotations

import json

import pytest

from tests.orchestrator.support import OrchestratorApi
from tests.support.fake_llm import Call, Hang, Text, ToolCalls


@pytest.fixture(scope="module")
def settings_overrides() -> dict:
    # the model's own timeout stays longer than the delegation's: the delegation ends first
    return {"delegation_timeout_seconds": 0.5, "llm_timeout_seconds": 3.0}


def tool_names(request: dict) -> list[str]:
    return [t["function"]["name"] for t in request.get("tools") or []]


def description_of(request: dict, name: str) -> str:
    return next(
        t["function"]["description"] for t in request["tools"] if t["function"]["name"] == name
    )


async def test_disabled_and_unknown_specialists_answer_self_correcting_errors(
    api: OrchestratorApi,
) -> None:
    researcher = await api.add_agent(
        name="Researcher", agent_type="specialist", description="Looks things up."
    )
    await api.add_agent(
        name="Helper",
        agent_type="specialist",
        description="Helps.",
        tool_description="Use for chores the user mentions.",
    )
    researcher_id = researcher.id
    await api.db.commit()  # end the read of the id: SQLite writers wait for readers
    patched = await api.client.patch(
        f"/api/agents/{researcher_id}", json={"enabled": False}, headers=api.headers
    )
    assert patched.status_code == 200, patched.text
    assert patched.json()["enabled"] is False
    api.llm.script(
        ToolCalls(
            Call("ask_researcher", {"message": "find x"}),
            Call("ask_nobody", {"message": "hello?"}),
        ),
        Text("I could not ask them."),
    )
    thread_id, run = await api.turn("what is x?")
    assert run["status"] == "completed", run
    offered = api.llm.requests[0]
    assert [n for n in tool_names(offered) if n.startswith("ask_")] == ["ask_helper"]
    assert description_of(offered, "ask_helper") == "Use for chores the user mentions."
    disabled, unknown = [m["tool_activity"] for m in await api.tool_messages(thread_id)]
    assert disabled["status"] == "failure" and disabled["error_type"] == "user_error"
    assert disabled["error"] == (
        "ask_researcher is currently disabled. Available specialist tools: ask_helper."
    )
    assert unknown["status"] == "failure" and unknown["error_type"] == "validation_error"
    assert (
        unknown["error"] == "ask_nobody is not available. Available specialist tools: ask_helper."
    )
    results = [m for m in api.llm.requests[1]["messages"] if m["role"] == "tool"]
    assert '"available_tools":["ask_helper"]' in results[0]["content"]

    # enabled again: offered, described by its description (no tool_description)
    await api.client.patch(
        f"/api/agents/{researcher_id}", json={"enabled": True}, headers=api.headers
    )
    api.llm.script(Text("ok"))
    await api.turn("again", thread_id)
    offered = api.llm.requests[-1]
    assert {"ask_helper", "ask_researcher"} <= set(tool_names(offered))
    assert description_of(offered, "ask_researcher") == "Looks things up."


async def test_a_specialist_asks_another_up_to_the_depth_limit(api: OrchestratorApi) -> None:
    researcher = await api.add_agent(name="Researcher", agent_type="specialist")
    checker = await api.add_agent(name="Checker", agent_type="specialist")
    await api.add_agent(name="Archivist", agent_type="specialist")
    researcher_id, checker_id = str(researcher.id), str(checker.id)
    await api.db.commit()  # end the read of the ids: SQLite writers wait for readers
    api.llm.script(
        ToolCalls(Call("ask_researcher", {"message": "find x"})),  # the assistant (depth 0)
        ToolCalls(Call("ask_checker", {"message": "check x"})),  # the researcher (depth 1)
        ToolCalls(Call("ask_archivist", {"message": "file x"})),  # the checker (depth 2)
        Text("x checked"),  # the checker, after its refused call
        Text("x is 42, checked"),  # the researcher
        Text("x is 42."),  # the assistant
    )
    thread_id, run = await api.turn("what is x?")
    assert run["status"] == "completed", run
    ask_researcher, ask_checker, ask_archivist = [
        m["tool_activity"] for m in await api.tool_messages(thread_id)
    ]
    assert ask_researcher["status"] == "success"
    assert ask_researcher["data"]["answer"] == "x is 42, checked"
    assert ask_checker["status"] == "success" and ask_checker["data"]["answer"] == "x checked"
    assert ask_checker["input"]["delegated_by"]["agent_id"] == researcher_id
    assert ask_archivist["status"] == "failure"
    assert ask_archivist["input"]["delegated_by"]["agent_id"] == checker_id
    assert ask_archivist["error"] == (
        "ask_archivist is not available: delegation is limited to 2 level(s) and "
        "Checker is already at that depth."
    )
    # the researcher may ask the others, never itself; the checker (at the limit) nobody
    assert sorted(n for n in tool_names(api.llm.requests[1]) if n.startswith("ask_")) == [
        "ask_archivist",
        "ask_checker",
    ]
    assert not [n for n in tool_names(api.llm.requests[2]) if n.startswith("ask_")]
    assert (await api.messages(thread_id))[-1]["content"] == "x is 42."


async def test_a_specialist_that_does_not_answer_in_time_is_a_timeout(
    api: OrchestratorApi,
) -> None:
    await api.add_agent(name="Slowpoke", agent_type="specialist")
    api.llm.script(
        ToolCalls(Call("ask_slowpoke", {"message": "think hard"})),
        Hang(),  # the specialist's model never answers
        Text("It did not answer in time."),
    )
    thread_id, run = await api.turn("ask slowpoke")
    assert run["status"] == "completed", run
    ask = (await api.tool_messages(thread_id))[0]["tool_activity"]
    assert ask["status"] == "failure" and ask["error_type"] == "timeout"
    assert ask["error"] == "Slowpoke did not answer within 0.5 seconds."
    assert ask["preview"] == ["Slowpoke did not answer within 0.5 seconds."]
    running = [
        c for c in api.frames.cells() if c["id"] == ask["id"] and c["status"] == "in_progress"
    ]
    assert running and running[0]["display_message"] == "Asking Slowpoke…"  # while it thinks
    assert (await api.messages(thread_id))[-1]["content"] == "It did not answer in time."


async def test_a_specialists_call_shows_while_written_and_ends_with_its_delegation(
    api: OrchestratorApi,
) -> None:
    """The specialist begins writing a call (its cell `preparing`, saying whom it
    answers) and the delegation times out meanwhile: that cell ends with it, once."""
    await api.add_agent(name="Slowpoke", agent_type="specialist")
    api.llm.script(
        ToolCalls(Call("ask_slowpoke", {"message": "note it"})),
        ToolCalls(  # the specialist's model writes a call it never finishes
            Call("test_echo", {"action": "echo", "text": "a long note " * 10}),
            pieces=8,
            pause=0.1,
            hang_after=True,
        ),
        Text("It did not answer in time."),
    )
    thread_id, run = await api.turn("ask slowpoke")
    assert run["status"] == "completed", run
    ask, echo = await api.tool_messages(thread_id)
    assert ask["tool_activity"]["error_type"] == "timeout"
    preparing = next(c for c in api.frames.cells() if c["status"] == "preparing")
    assert preparing["name"] == "test_echo"
    assert preparing["display_message"] == "Preparing test_echo…"
    assert preparing["input"]["delegated_by"]["agent_name"] == "Slowpoke"
    ends = [
        c for c in api.frames.cells() if c["id"] == preparing["id"] and c["status"] == "failure"
    ]
    assert len(ends) == 1 and ends[0]["error"] == "The specialist stopped before this call ended."
    assert echo["tool_activity"]["status"] == "failure"


async def test_ask_arguments_are_validated_like_every_tool(api: OrchestratorApi) -> None:
    """Invalid JSON is reported as invalid JSON; a parameter the schema does not have
    (additionalProperties: false) or a message that is not text is refused field by field;
    each error carries an example call, and the specialist is never asked."""
    await api.add_agent(name="Researcher", agent_type="specialist")
    api.llm.script(
        ToolCalls(
            Call("ask_researcher", '{"message": "find x"'),
            Call("ask_researcher", {"message": "find x", "urgency": "high"}),
            Call("ask_researcher", {"message": 42}),
            Call("ask_researcher", {}),
        ),
        Text("I will ask properly next time."),
    )
    thread_id, run = await api.turn("what is x?")
    assert run["status"] == "completed", run
    assert len(api.llm.requests) == 2  # no specialist loop ran
    bad_json, extra, not_text, empty = [
        m["tool_activity"] for m in await api.tool_messages(thread_id)
    ]
    assert bad_json["error"].startswith("Arguments are not valid JSON (")
    assert extra["error"] == ("Invalid parameters for ask_researcher: urgency: unknown parameter.")
    assert not_text["error"] == (
        "Invalid parameters for ask_researcher: message: Expected `str`, got `int`."
    )
    assert empty["error"] == "message is required."
    for activity in (bad_json, extra, not_text, empty):
        assert activity["status"] == "failure" and activity["error_type"] == "validation_error"
    # what the model reads: the self-correcting shape of every tool's errors
    read = [
        json.loads(m["content"]) for m in api.llm.requests[1]["messages"] if m["role"] == "tool"
    ]
    assert "action" not in read[0]["suggestion"] and '"message"' in read[0]["suggestion"]
    assert read[1]["errors"] == [{"field": "urgency", "message": "unknown parameter"}]
    assert read[1]["allowed_params"] == ["message"]
    assert read[2]["errors"] == [{"field": "message", "message": "Expected `str`, got `int`"}]
    assert read[3]["required_param"] == "message"
    for error in read:
        assert error["type"] == "error" and error["error_type"] == "validation_error"
        assert error["example"] == {"message": "your question, self-contained"}


async def test_ask_tools_are_listed_in_the_catalog_and_the_agents_tools(
    api: OrchestratorApi,
) -> None:
    researcher = await api.add_agent(
        name="Researcher", agent_type="specialist", tool_description="Ask for facts."
    )
    await api.add_agent(name="Sleeper", agent_type="specialist", enabled=False)
    researcher_id, assistant_id = str(researcher.id), str(api.user.agent.id)
    await api.db.commit()
    catalog = await api.client.get("/api/tools", headers=api.headers)
    assert catalog.status_code == 200, catalog.text
    asks = [t for t in catalog.json()["items"] if t["name"].startswith("ask_")]
    assert [t["name"] for t in asks] == ["ask_researcher"]  # the disabled one is not offered
    (ask,) = asks
    assert ask["executor"] == "agent" and ask["agent_id"] == researcher_id
    assert ask["description"] == "Ask for facts." and ask["params_hint"] == "message"
    assert ask["parameters"]["additionalProperties"] is False
    assert "tester" in ask["agent_types"]
    agent = (await api.client.get(f"/api/agents/{assistant_id}", headers=api.headers)).json()
    assert agent["tools"][-1] == "ask_researcher"
    # a specialist is offered the others, never itself
    itself = (await api.client.get(f"/api/agents/{researcher_id}", headers=api.headers)).json()
    assert not [name for name in itself["tools"] if name.startswith("ask_")]
    listed = (await api.client.get("/api/agents", headers=api.headers)).json()["items"]
    assert {a["id"]: a["tools"] for a in listed}[assistant_id][-1] == "ask_researcher"


async def test_enabled_tools_restrict_the_specialists_too(api: OrchestratorApi) -> None:
    """An agent restricted to `tasks.list` reaches no specialist (whose web and memory
    it was not given); one that lists `ask_helper` reaches that one only."""
    for name in ("Helper", "Researcher"):
        await api.add_agent(name=name, agent_type="specialist", description=f"{name}.")
    await api.db.commit()
    url = f"/api/agents/{api.user.agent.id}"
    for enabled, asks in ((["tasks.list"], []), (["tasks.list", "ask_helper"], ["ask_helper"])):
        patched = await api.client.patch(url, json={"enabled_tools": enabled}, headers=api.headers)
        assert patched.status_code == 200, patched.text
        assert [t for t in patched.json()["tools"] if t.startswith("ask_")] == asks
        api.llm.script(Text("ok"))
        await api.turn("hello")
        offered = [n for n in tool_names(api.llm.requests[-1]) if n.startswith("ask_")]
        assert offered == asks
    typo = await api.client.patch(url, json={"enabled_tools": ["ask helper"]}, headers=api.headers)
    assert typo.status_code == 400
