"""Branch changes reach every device of the user over `/api/ws` (issue 43): two phones
of one user subscribed to a thread; what one does (regenerate, switch, edit, delete) the
other sees live, and a phone away during a switch resumes by `seq` to a fresh GET's view.

The app is the orchestrator's (runner on, fake model), served on a loopback socket."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from tests.orchestrator.support import OrchestratorApi
from tests.realtime.support import ThreadState, WsClient, fetch_messages
from tests.support.fake_llm import Text


class Device:
    """A phone's socket and what it holds: frames applied to a ThreadState."""

    def __init__(self, ws_url: str, token: str, thread_id: str) -> None:
        self.ws_url, self.token, self.thread_id = ws_url, token, thread_id
        self.state = ThreadState()
        self.branch_frames: list[dict[str, Any]] = []
        self.ws: WsClient | None = None

    def _on_frame(self, frame: dict[str, Any]) -> None:
        if frame["type"] == "branch":
            self.branch_frames.append(frame)
        if frame["type"] in ("message", "branch"):
            self.state.apply(frame)

    @asynccontextmanager
    async def online(self) -> AsyncIterator[Device]:
        """Connected and subscribed after the highest seq held (a resume)."""
        async with WsClient.connect(self.ws_url, self.token, on_frame=self._on_frame) as ws:
            self.ws = ws
            await ws.subscribe(self.thread_id, after_seq=self.state.last_seq)
            await ws.wait_type("subscribed")
            yield self
        self.ws = None

    async def caught_up(self, api: OrchestratorApi) -> dict[str, Any]:
        """Wait until it holds every change a fresh GET has; that GET's latest page."""
        url = f"/api/threads/{self.thread_id}/messages"
        page = (await api.client.get(url, params={"limit": 100}, headers=api.headers)).json()
        assert self.ws is not None
        await self.ws.wait_for(lambda _frame: self.state.last_seq >= page["last_seq"])
        return page

    async def sees_a_fresh_get(self, api: OrchestratorApi) -> None:
        page = await self.caught_up(api)
        assert self.state.current_leaf_id == page["current_leaf_id"]
        assert self.state.branch() == page["items"]
        everything = await fetch_messages(api.client, self.thread_id, api.headers)
        assert self.state.messages == everything["messages"]  # deleted ones dropped too


def _ws_url(openai_base_url: str) -> str:
    return openai_base_url.replace("http://", "ws://").removesuffix("/v1") + "/api/ws"


async def _act(api: OrchestratorApi, thread_id: str, message_id: str, action: str) -> Any:
    url = f"/api/threads/{thread_id}/messages/{message_id}"
    if action == "delete":
        response = await api.client.delete(url, headers=api.headers)
        assert response.status_code == 204, response.text
        return None
    body = {"content": "a bigger number?"} if action == "edit" else {}
    response = await api.client.post(f"{url}/{action}", json=body, headers=api.headers)
    assert response.status_code in (200, 202), response.text
    answer = response.json()
    if action in ("edit", "regenerate"):
        await api.wait_run(thread_id, answer["run"]["id"])
    return answer


async def test_a_phone_sees_the_other_phones_branch_changes_live(
    api: OrchestratorApi, openai_base_url: str
) -> None:
    api.llm.script(Text("one"), Text("two"), Text("ten"))
    thread_id, _ = await api.turn("a number?")
    question, first = await api.messages(thread_id)
    url = _ws_url(openai_base_url)
    a, b = (Device(url, api.user.token, thread_id) for _ in range(2))
    async with a.online(), b.online():
        for device in (a, b):
            await device.sees_a_fresh_get(api)

        # A regenerates the answer: both see the branch move to the question, then "two"
        await _act(api, thread_id, first["id"], "regenerate")
        for device in (a, b):
            await device.sees_a_fresh_get(api)
            assert str(device.branch_frames[-1]["current_leaf_id"]) == question["id"]
        assert [m["content"] for m in b.state.branch()] == ["a number?", "two"]

        # A switches back to the first answer
        await _act(api, thread_id, first["id"], "switch")
        for device in (a, b):
            await device.sees_a_fresh_get(api)
            assert device.branch_frames[-1]["current_leaf_id"] == first["id"]
        assert [m["content"] for m in b.state.branch()] == ["a number?", "one"]

        # A edits the question: a new version, current, answered
        edited = await _act(api, thread_id, question["id"], "edit")
        version = edited["message"]
        for device in (a, b):
            await device.sees_a_fresh_get(api)
            assert device.branch_frames[-1]["current_leaf_id"] == version["id"]
        assert [m["content"] for m in b.state.branch()] == ["a bigger number?", "ten"]
        ten = b.state.branch()[-1]

        # A deletes the edited version: its branch goes, the thread shows the newest left
        await _act(api, thread_id, version["id"], "delete")
        for device in (a, b):
            await device.sees_a_fresh_get(api)
            deleted = device.branch_frames[-1]["deleted_message_ids"]
            assert sorted(deleted) == sorted([version["id"], ten["id"]])
        assert [m["content"] for m in b.state.branch()] == ["a number?", "two"]
        assert b.state.branch()[0]["siblings"]["count"] == 1


async def test_a_phone_away_during_a_switch_resumes_to_a_fresh_get(
    api: OrchestratorApi, openai_base_url: str
) -> None:
    api.llm.script(Text("one"), Text("two"))
    thread_id, _ = await api.turn("a number?")
    _, first = await api.messages(thread_id)
    b = Device(_ws_url(openai_base_url), api.user.token, thread_id)
    async with b.online():
        await _act(api, thread_id, first["id"], "regenerate")
        await b.sees_a_fresh_get(api)
    assert [m["content"] for m in b.state.branch()] == ["a number?", "two"]

    # away (the app in the background) while the other phone switches back
    await _act(api, thread_id, first["id"], "switch")
    held = b.state.last_seq
    async with b.online():
        await b.sees_a_fresh_get(api)
    assert [m["content"] for m in b.state.branch()] == ["a number?", "one"]
    # the resume named the leaf with a seq after the one held (no message changed)
    assert b.branch_frames[-1]["seq"] > held
    assert b.branch_frames[-1]["current_leaf_id"] == first["id"]


async def test_a_phone_subscribing_after_a_switch_learns_the_leaf(
    api: OrchestratorApi, openai_base_url: str
) -> None:
    api.llm.script(Text("one"), Text("two"))
    thread_id, _ = await api.turn("a number?")
    _, first = await api.messages(thread_id)
    await _act(api, thread_id, first["id"], "regenerate")
    await _act(api, thread_id, first["id"], "switch")
    # a phone that never subscribed to this thread (it holds nothing) subscribes now
    fresh = Device(_ws_url(openai_base_url), api.user.token, thread_id)
    async with fresh.online():
        await fresh.sees_a_fresh_get(api)
    assert fresh.branch_frames[-1]["current_leaf_id"] == first["id"]
    assert [m["content"] for m in fresh.state.branch()] == ["a number?", "one"]
