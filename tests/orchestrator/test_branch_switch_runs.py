"""A branch switch while a run is under way follows `if_running` (issue 43): `reject`
answers 409, `cancel` stops the run and then switches, `queue` (the default) switches
when the runs under way have ended; a later request's branch replaces a switch kept;
a switch kept in a run's row is made by whatever ends the run (here the reaper)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select, update

from app.db import clock
from app.db.models import Run, Thread
from app.orchestrator.scheduling.reaper import reap_expired_runs
from app.realtime.events import BranchFrame
from app.threads.pending_switch import PENDING
from tests.orchestrator.support import OrchestratorApi
from tests.support.fake_llm import Call, Text, ToolCalls
from tests.support.statements import statements_everywhere


async def _act(api: OrchestratorApi, thread_id: str, message_id: str, action: str, **body: Any):
    url = f"/api/threads/{thread_id}/messages/{message_id}/{action}"
    if action == "switch":  # no body: `if_running` in the query
        return await api.client.post(url, params=body, headers=api.headers)
    return await api.client.post(url, json=body, headers=api.headers)


def _said(messages: list[dict]) -> list[tuple[str, str | None]]:
    return [(m["role"], m["content"]) for m in messages if m["role"] != "tool"]


async def _two_answers(api: OrchestratorApi) -> tuple[str, dict, dict]:
    """A thread whose question has two answers, the second shown: (thread, first, second)."""
    thread_id, _ = await api.turn("a number?")
    _, first = await api.messages(thread_id)
    regenerated = await _act(api, thread_id, first["id"], "regenerate")
    await api.wait_run(thread_id, regenerated.json()["run"]["id"])
    return thread_id, first, (await api.messages(thread_id))[1]


async def test_switch_during_a_run_rejects_or_cancels(api: OrchestratorApi) -> None:
    slow = ToolCalls(Call("test_slow", {"action": "wait", "seconds": 30}))
    api.llm.script(Text("one"), Text("two"), slow, Text("never"))
    thread_id, first, _ = await _two_answers(api)
    posted = (await api.post(thread_id, "go on slowly")).json()
    await api.wait_activity("in_progress", "test_slow")

    unknown = await _act(api, thread_id, first["id"], "switch", if_running="later")
    assert unknown.status_code == 400
    refused = await _act(api, thread_id, first["id"], "switch", if_running="reject")
    assert refused.status_code == 409
    assert refused.json()["active_run_id"] == posted["run"]["id"]

    cancelled = await _act(api, thread_id, first["id"], "switch", if_running="cancel")
    # the run must stop before the leaf moves (it writes below it): the branch still shown
    assert cancelled.status_code == 202, cancelled.text
    assert ("user", "go on slowly") in _said(cancelled.json()["items"])
    run = await api.wait_run(thread_id, posted["run"]["id"])
    assert run["status"] == "cancelled"
    assert _said(await api.messages(thread_id)) == [("user", "a number?"), ("assistant", "one")]
    moves = [f for _, f in api.frames.frames if isinstance(f, BranchFrame)]
    assert str(moves[-1].current_leaf_id) == first["id"]
    # the abandoned branch keeps its cancelled wait
    back = await _act(api, thread_id, posted["message"]["id"], "switch")
    assert back.status_code == 200, back.text
    cells = [m["tool_activity"] for m in back.json()["items"] if m["role"] == "tool"]
    assert [(c["status"], c["error_type"]) for c in cells] == [("failure", "cancelled")]


async def test_switch_queued_is_made_when_the_runs_end(api: OrchestratorApi) -> None:
    quick = ToolCalls(Call("test_slow", {"action": "wait", "seconds": 0.3}))
    api.llm.script(Text("one"), Text("two"), quick, Text("done"), Text("later"))
    thread_id, first, second = await _two_answers(api)
    posted = (await api.post(thread_id, "go on")).json()
    await api.wait_activity("in_progress", "test_slow")
    behind = (await api.post(thread_id, "and more")).json()  # queued behind it

    kept = await _act(api, thread_id, first["id"], "switch")  # default: queue
    assert kept.status_code == 202, kept.text
    assert kept.json()["current_leaf_id"] != first["id"]
    await api.wait_run(thread_id, posted["run"]["id"])
    # the first run's end hands the switch on: the message queued behind is answered first
    assert (await api.wait_run(thread_id, behind["run"]["id"]))["status"] == "completed"
    assert _said(await api.messages(thread_id)) == [("user", "a number?"), ("assistant", "one")]
    # the other branch is whole: both messages answered there
    page = (await _act(api, thread_id, second["id"], "switch")).json()
    said = _said(page["items"])
    assert said[:2] == [("user", "a number?"), ("assistant", "two")]
    assert {"go on", "and more", "done", "later"} <= {content for _, content in said}


async def test_a_later_edit_replaces_a_switch_kept(api: OrchestratorApi) -> None:
    quick = ToolCalls(Call("test_slow", {"action": "wait", "seconds": 0.3}))
    api.llm.script(Text("one"), Text("two"), quick, Text("done"), Text("edited"))
    thread_id, first, _ = await _two_answers(api)
    posted = (await api.post(thread_id, "go on")).json()
    await api.wait_activity("in_progress", "test_slow")
    assert (await _act(api, thread_id, first["id"], "switch")).status_code == 202
    edited = await _act(api, thread_id, posted["message"]["id"], "edit", content="go on, edited")
    assert edited.status_code == 202, edited.text
    await api.wait_run(thread_id, edited.json()["run"]["id"])
    assert _said(await api.messages(thread_id))[-2:] == [
        ("user", "go on, edited"),
        ("assistant", "edited"),
    ]


async def test_a_switch_kept_in_a_run_is_made_by_the_reaper(api: OrchestratorApi) -> None:
    api.llm.script(Text("one"), Text("two"))
    thread_id, first, second = await _two_answers(api)
    # a run whose process went away holding a switch (as a restart finds it)
    run = Run(
        thread_id=thread_id,
        agent_id=api.user.agent.id,
        trigger_message_id=second["parent_id"],
        status="running",
        options={PENDING: first["id"]},
        lease_owner="gone",
        lease_expires_at=clock.now(),
        started_at=clock.now(),
        created_at=clock.now(),
    )
    api.db.add(run)
    await api.db.commit()
    assert (await _act(api, thread_id, second["id"], "switch")).status_code == 202
    await api.db.execute(update(Run).where(Run.id == run.id).values(lease_expires_at=clock.now()))
    reaped = await reap_expired_runs(api.db)
    await api.db.commit()
    assert [r.id for r in reaped] == [run.id]
    leaf = await api.db.scalar(select(Thread.current_leaf_id).where(Thread.id == thread_id))
    assert str(leaf) == second["id"]  # the switch asked last, kept in the run's row


def _written_alone(seen: list[tuple[str, bool]], head: str) -> list[bool]:
    """For each statement that starts with `head`: whether it ran outside any transaction."""
    return [alone for statement, alone in seen if statement.lstrip().startswith(head)]


async def test_an_end_that_carries_more_is_one_transaction(api: OrchestratorApi) -> None:
    """A run's end is one statement alone when it can be (on PostgreSQL, without BEGIN and
    COMMIT); one that also records a regenerated answer's versions, or makes a kept
    switch, writes them in its transaction: a crash between cannot lose them."""
    quick = ToolCalls(Call("test_slow", {"action": "wait", "seconds": 0.3}))
    api.llm.script(Text("one"), Text("two"), quick, Text("done"))
    with statements_everywhere() as seen:
        thread_id, first, second = await _two_answers(api)
        posted = (await api.post(thread_id, "go on")).json()
        await api.wait_activity("in_progress", "test_slow")
        assert (await _act(api, thread_id, first["id"], "switch")).status_code == 202
        assert (await api.wait_run(thread_id, posted["run"]["id"]))["status"] == "completed"
    assert second["siblings"] == {"count": 2, "index": 1, "ids": [first["id"], second["id"]]}
    assert _said(await api.messages(thread_id)) == [("user", "a number?"), ("assistant", "one")]
    # the versions' sibling ids (on PostgreSQL with their bump: WITH bump AS (...) UPDATE)
    versions = [
        alone for statement, alone in seen if "UPDATE thread_messages SET sibling_ids" in statement
    ]
    switches = _written_alone(seen, "UPDATE threads SET current_leaf_id")
    assert versions and switches
    assert not any(versions + switches), (versions, switches)
    # the first answer, which carried nothing more, ended alone on PostgreSQL
    postgres = api.db.get_bind().dialect.name == "postgresql"
    ends = [alone for statement, alone in seen if "INSERT INTO thread_messages" in statement]
    assert ends[1] is postgres, ends  # the question's insert, then the first answer's end
