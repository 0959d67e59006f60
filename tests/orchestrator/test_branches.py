"""Edit, regenerate, switch and delete branches, through the public API (issue 43)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import func, select

from app.db.models import ThreadMessage
from tests.orchestrator.support import OrchestratorApi
from tests.support.fake_llm import Call, Text, ToolCalls


def _url(thread_id: str, message_id: str, action: str = "") -> str:
    return f"/api/threads/{thread_id}/messages/{message_id}" + (f"/{action}" if action else "")


async def _act(api: OrchestratorApi, thread_id: str, message_id: str, action: str, **body: Any):
    return await api.client.post(
        _url(thread_id, message_id, action), json=body, headers=api.headers
    )


def _said(messages: list[dict]) -> list[tuple[str, str | None]]:
    return [(m["role"], m["content"]) for m in messages]


def _model_saw(api: OrchestratorApi, request: int) -> list[tuple[str, Any]]:
    return [(m["role"], m.get("content")) for m in api.llm.requests[request]["messages"][1:]]


async def test_edit_answers_a_new_branch_and_keeps_the_old(api: OrchestratorApi) -> None:
    api.llm.script(Text("Paris."), Text("Rome."))
    thread_id, _ = await api.turn("capital of France?")
    question, answer = await api.messages(thread_id)
    edited = await _act(api, thread_id, question["id"], "edit", content="capital of Italy?")
    assert edited.status_code == 202, edited.text
    version = edited.json()["message"]
    assert version["parent_id"] is None and version["siblings"]["count"] == 2
    await api.wait_run(thread_id, edited.json()["run"]["id"])

    shown = await api.messages(thread_id)
    assert _said(shown) == [("user", "capital of Italy?"), ("assistant", "Rome.")]
    assert shown[0]["siblings"] == {"count": 2, "index": 1, "ids": [question["id"], version["id"]]}
    assert shown[1]["parent_id"] == version["id"]
    # the model answering the edit read the new question only
    assert _model_saw(api, 1) == [("user", "capital of Italy?")]

    # the old branch is intact: switch back to it (one call answers its page)
    switched = await _act(api, thread_id, question["id"], "switch")
    assert switched.status_code == 200, switched.text
    page = switched.json()
    assert _said(page["items"]) == [("user", "capital of France?"), ("assistant", "Paris.")]
    assert page["current_leaf_id"] == answer["id"]
    assert page["items"][0]["siblings"]["index"] == 0
    assert _said(await api.messages(thread_id)) == _said(page["items"])


async def test_regenerate_three_versions_then_switch_to_the_first(api: OrchestratorApi) -> None:
    api.llm.script(Text("one"), Text("two"), Text("three"), Text("after one"))
    thread_id, _ = await api.turn("a number?")
    question, first = await api.messages(thread_id)
    for _ in range(2):
        regenerated = await _act(api, thread_id, first["id"], "regenerate")
        assert regenerated.status_code == 202, regenerated.text
        assert regenerated.json()["message"]["id"] == question["id"]
        done = await api.wait_run(thread_id, regenerated.json()["run"]["id"])
        assert done["status"] == "completed", done
    shown = await api.messages(thread_id)
    assert _said(shown) == [("user", "a number?"), ("assistant", "three")]
    assert (shown[1]["siblings"]["index"], shown[1]["siblings"]["count"]) == (2, 3)  # "3/3"
    assert shown[1]["siblings"]["ids"][0] == first["id"]
    # each regeneration read the question, never an earlier answer
    assert _model_saw(api, 1) == _model_saw(api, 2) == [("user", "a number?")]

    await _act(api, thread_id, first["id"], "switch")
    shown = await api.messages(thread_id)
    assert _said(shown) == [("user", "a number?"), ("assistant", "one")]
    assert shown[1]["siblings"]["index"] == 0 and shown[1]["siblings"]["count"] == 3
    # the next turn goes on from branch 1: the model sees that branch only
    await api.turn("and then?", thread_id)
    assert _model_saw(api, 3) == [
        ("user", "a number?"),
        ("assistant", "one"),
        ("user", "and then?"),
    ]


async def test_regenerate_on_another_agent_and_idempotently(api: OrchestratorApi) -> None:
    other = await api.add_agent(
        name="second opinion", agent_type=api.user.agent.agent_type, model=api.user.agent.model
    )
    api.llm.script(Text("first"), Text("second"))
    thread_id, _ = await api.turn("opinions?")
    _, answer = await api.messages(thread_id)
    body = {"agent_id": str(other.id), "client_message_id": "regen-1"}
    first = await _act(api, thread_id, answer["id"], "regenerate", **body)
    again = await _act(api, thread_id, answer["id"], "regenerate", **body)
    assert first.status_code == 202 and again.status_code == 200
    assert again.json()["run"]["id"] == first.json()["run"]["id"]
    run = await api.wait_run(thread_id, first.json()["run"]["id"])
    assert run["status"] == "completed"
    assert _said(await api.messages(thread_id))[-1] == ("assistant", "second")
    stranger = await _act(api, thread_id, answer["id"], "regenerate", agent_id=str(thread_id))
    assert stranger.status_code == 404


async def test_edit_is_idempotent_and_checks_its_target(api: OrchestratorApi) -> None:
    api.llm.script(Text("a"), Text("b"))
    thread_id, _ = await api.turn("q")
    question, answer = await api.messages(thread_id)
    body = {"content": "q2", "client_message_id": "edit-1"}
    first = await _act(api, thread_id, question["id"], "edit", **body)
    again = await _act(api, thread_id, question["id"], "edit", **body)
    assert first.status_code == 202 and again.status_code == 200
    assert again.json()["message"]["id"] == first.json()["message"]["id"]
    await api.wait_run(thread_id, first.json()["run"]["id"])
    assert (await _act(api, thread_id, answer["id"], "edit", content="x")).status_code == 409
    unknown = await _act(api, thread_id, thread_id, "edit", content="x")
    assert unknown.status_code == 404
    bad = await _act(api, thread_id, question["id"], "edit", content="")
    assert bad.status_code == 400


async def test_edit_during_a_run_follows_the_request(api: OrchestratorApi) -> None:
    slow = ToolCalls(Call("test_slow", {"action": "wait", "seconds": 30}))
    api.llm.script(slow, Text("edited answer"))
    thread_id = await api.new_thread()
    posted = (await api.post(thread_id, "slow question")).json()
    await api.wait_activity("in_progress", "test_slow")
    question = posted["message"]

    refused = await _act(api, thread_id, question["id"], "edit", content="x", if_running="reject")
    assert refused.status_code == 409
    assert refused.json()["active_run_id"] == posted["run"]["id"]

    edited = await _act(
        api, thread_id, question["id"], "edit", content="quick", if_running="cancel"
    )
    assert edited.status_code == 202, edited.text
    old_run = await api.wait_run(thread_id, posted["run"]["id"])
    assert old_run["status"] == "cancelled"
    await api.wait_run(thread_id, edited.json()["run"]["id"])
    assert _said(await api.messages(thread_id)) == [
        ("user", "quick"),
        ("assistant", "edited answer"),
    ]
    # the abandoned branch keeps its cancelled cell, out of the model's sight
    await _act(api, thread_id, question["id"], "switch")
    cells = [m["tool_activity"] for m in await api.messages(thread_id) if m["role"] == "tool"]
    assert [(c["status"], c["error_type"]) for c in cells] == [("failure", "cancelled")]


async def test_edit_queued_behind_a_run_answers_after_it(api: OrchestratorApi) -> None:
    api.llm.script(
        ToolCalls(Call("test_slow", {"action": "wait", "seconds": 0.3})),
        Text("old answer"),
        Text("new answer"),
    )
    thread_id = await api.new_thread()
    posted = (await api.post(thread_id, "first")).json()
    await api.wait_activity("in_progress", "test_slow")
    edited = await _act(api, thread_id, posted["message"]["id"], "edit", content="second")
    assert edited.status_code == 202 and edited.json()["run"]["status"] == "queued"
    new_run = await api.wait_run(thread_id, edited.json()["run"]["id"])
    old_run = await api.get_run(thread_id, posted["run"]["id"])
    assert old_run["status"] == "completed" and old_run["finished_at"] <= new_run["started_at"]
    assert _said(await api.messages(thread_id)) == [("user", "second"), ("assistant", "new answer")]
    await _act(api, thread_id, posted["message"]["id"], "switch")
    roles = [m["role"] for m in await api.messages(thread_id)]
    assert roles == ["user", "assistant", "tool", "assistant"]  # the old turn, whole
    assert _model_saw(api, 2) == [("user", "second")]


async def test_delete_a_branch_removes_its_messages_and_cells_only(api: OrchestratorApi) -> None:
    api.llm.script(
        ToolCalls(Call("test_echo", {"action": "echo", "text": "hi"})),
        Text("echoed"),
        Text("plain"),
        Text("elsewhere"),
    )
    thread_id, _ = await api.turn("echo please")
    other_thread, _ = await api.turn("keep me")
    question = (await api.messages(thread_id))[0]
    edited = await _act(api, thread_id, question["id"], "edit", content="no echo")
    await api.wait_run(thread_id, edited.json()["run"]["id"])
    await _act(api, thread_id, question["id"], "switch")
    assert len(await api.messages(thread_id)) == 4

    gone = await api.client.delete(_url(thread_id, question["id"]), headers=api.headers)
    assert gone.status_code == 204, gone.text
    shown = await api.messages(thread_id)
    assert _said(shown) == [("user", "no echo"), ("assistant", "elsewhere")]
    assert shown[0]["siblings"]["count"] == 1
    count = select(func.count()).select_from(ThreadMessage)
    assert await api.db.scalar(count.where(ThreadMessage.thread_id == thread_id)) == 2
    assert len(await api.messages(other_thread)) == 2
    again = await api.client.delete(_url(thread_id, question["id"]), headers=api.headers)
    assert again.status_code == 404


async def test_delete_during_a_run_refuses_only_the_branch_it_writes_in(
    api: OrchestratorApi,
) -> None:
    api.llm.script(
        Text("Paris."),
        ToolCalls(Call("test_slow", {"action": "wait", "seconds": 1.5})),
        Text("Rome."),
    )
    thread_id, _ = await api.turn("capital of France?")
    question = (await api.messages(thread_id))[0]
    edited = await _act(api, thread_id, question["id"], "edit", content="capital of Italy?")
    run, version = edited.json()["run"], edited.json()["message"]
    await api.wait_activity("in_progress", "test_slow")

    refused = await api.client.delete(_url(thread_id, version["id"]), headers=api.headers)
    assert refused.status_code == 409, refused.text
    assert refused.json()["active_run_id"] == run["id"]
    old_branch = await api.client.delete(_url(thread_id, question["id"]), headers=api.headers)
    assert old_branch.status_code == 204, old_branch.text

    assert (await api.wait_run(thread_id, run["id"]))["status"] == "completed"
    shown = await api.messages(thread_id)
    assert [m["role"] for m in shown] == ["user", "assistant", "tool", "assistant"]
    assert (shown[0]["content"], shown[-1]["content"]) == ("capital of Italy?", "Rome.")
    assert shown[0]["siblings"]["count"] == 1
    count = select(func.count()).select_from(ThreadMessage)
    assert await api.db.scalar(count.where(ThreadMessage.thread_id == thread_id)) == 4


async def test_a_device_that_missed_a_switch_catches_up(api: OrchestratorApi) -> None:
    api.llm.script(Text("one"), Text("two"))
    thread_id, _ = await api.turn("a number?")
    _, first = await api.messages(thread_id)
    url = f"/api/threads/{thread_id}/messages"
    regenerated = await _act(api, thread_id, first["id"], "regenerate")
    await api.wait_run(thread_id, regenerated.json()["run"]["id"])
    # the other device last synced here, then missed a switch back to the first answer
    cursor = (await api.client.get(url, headers=api.headers)).json()["last_seq"]
    switched_frames = len(api.frames.frames)
    await _act(api, thread_id, first["id"], "switch")
    live = [f for _, f in api.frames.frames[switched_frames:]]
    assert [(type(f).__name__, str(f.current_leaf_id), f.seq) for f in live] == [
        ("BranchFrame", first["id"], cursor + 1)  # the move, live, with a seq of its own
    ]
    synced = (await api.client.get(url, params={"after_seq": cursor}, headers=api.headers)).json()
    assert synced["current_leaf_id"] == first["id"] and synced["last_seq"] == cursor + 1
    assert synced["items"] == []  # no message changed
    # its view (what it held, the changes applied by id, the branch to the leaf) is a GET's
    held = {
        m["id"]: m
        for m in (await api.client.get(url, params={"after_seq": 0}, headers=api.headers)).json()[
            "items"
        ]
    }
    held.update({m["id"]: m for m in synced["items"]})
    branch, at = [], synced["current_leaf_id"]
    while at is not None:
        branch.insert(0, held[at])
        at = held[at]["parent_id"]
    assert branch == await api.messages(thread_id)
