"""The offline demo model shows what a newcomer reads about: it recalls (a question about
a memory is a search, not a save), delegates to a specialist, edits its own settings,
plans, asks the phone for a device tool, and answers each result in words."""

from __future__ import annotations

from tests.orchestrator.support import OrchestratorApi

DEMO = "demo/tool-demo"


async def _demo_turn(api: OrchestratorApi, agent_type: str, *texts: str) -> tuple[str, list]:
    """Each text a turn of a demo agent's thread: (the thread, the last reply's text)."""
    agent = await api.add_agent(name=f"demo-{agent_type}", agent_type=agent_type, model=DEMO)
    thread_id = await api.new_thread(agent.id)
    for text in texts:
        _, run = await api.turn(text, thread_id)
        assert run["status"] == "completed", run
    return thread_id, await api.messages(thread_id)


def _cells(messages: list[dict]) -> list[tuple[str, str | None]]:
    return [
        (m["tool_activity"]["name"], (m["tool_activity"]["input"] or {}).get("action"))
        for m in messages
        if m["role"] == "tool" and m["is_user_facing"]
    ]


async def test_a_question_about_a_memory_is_a_search_answered_in_words(
    api: OrchestratorApi,
) -> None:
    _, messages = await _demo_turn(
        api, "assistant", "remember that my dog is called Rex", "what do you remember about my dog?"
    )
    assert ("memory", "save") in _cells(messages) and ("memory", "search") in _cells(messages)
    answer = messages[-1]["content"]
    assert answer.startswith("I remember: ") and "Rex" in answer


async def test_it_asks_a_specialist_and_passes_on_the_answer(api: OrchestratorApi) -> None:
    await api.add_agent(name="Researcher", agent_type="specialist", model=DEMO)
    _, messages = await _demo_turn(
        api, "assistant", "ask researcher to remember that otters hold hands"
    )
    assert ("ask_researcher", None) in _cells(messages)
    assert messages[-1]["content"].startswith("Researcher says: ")


async def test_it_changes_its_own_name(api: OrchestratorApi) -> None:
    _, messages = await _demo_turn(api, "assistant", "call yourself Ada")
    assert ("self_authoring", "update") in _cells(messages)
    assert messages[-1]["content"] == "My name is now “Ada”."
    agents = (await api.client.get("/api/agents", headers=api.headers)).json()["items"]
    assert "Ada" in [a["name"] for a in agents] and "demo-assistant" not in [
        a["name"] for a in agents
    ]


async def test_a_planner_agent_plans_then_acts(api: OrchestratorApi) -> None:
    _, messages = await _demo_turn(api, "planner", "remind me to water the plants")
    assert ("tasks", "create") in _cells(messages)
    plans = [m["plan"] for m in messages if m.get("plan")]
    assert plans and [s["action"] for s in plans[-1]["steps"]] == ["tool", "completion"]
    assert "water the plants" in messages[-1]["content"]


async def test_it_asks_the_phone_where_the_user_is(api: OrchestratorApi) -> None:
    agent = await api.add_agent(name="demo-companion", agent_type="companion", model=DEMO)
    thread_id = await api.new_thread(agent.id)
    response = await api.post(thread_id, "where am I?")
    waiting = await api.wait_activity("awaiting_device", "device_location")
    result = {"output": {"latitude": 52.52, "longitude": 13.4, "locality": "Berlin"}}
    url = f"/api/threads/{thread_id}/messages/{waiting['id']}/result"
    assert (await api.client.post(url, json=result, headers=api.headers)).status_code == 200
    run = await api.wait_run(thread_id, response.json()["run"]["id"])
    assert run["status"] == "completed", run
    assert (await api.messages(thread_id))[-1]["content"] == "You are in Berlin."
