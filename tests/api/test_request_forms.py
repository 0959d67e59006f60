"""A request in a form the API does not take gets the documented answer: a body that is
not JSON is a 415 (not "JSON is malformed"), a sync and a page back at once a 400."""

from __future__ import annotations

import httpx

from tests.api.support import assert_problem
from tests.conftest import ApiUser


async def _thread(client: httpx.AsyncClient, user: ApiUser) -> str:
    agents = (await client.get("/api/agents", headers=user.headers)).json()["items"]
    body = {"agent_id": agents[0]["id"]}
    return (await client.post("/api/threads", json=body, headers=user.headers)).json()["id"]


async def test_a_body_that_is_not_json_is_unsupported_media(
    client: httpx.AsyncClient, alice: ApiUser
) -> None:
    url = f"/api/threads/{await _thread(client, alice)}/messages"
    for media, body in (
        ("application/x-www-form-urlencoded", b"content=hi"),
        ("text/plain", b"hi"),
        ("multipart/form-data; boundary=x", b"--x--"),
    ):
        headers = {**alice.headers, "Content-Type": media}
        problem = assert_problem(await client.post(url, content=body, headers=headers), 415)
        assert "application/json" in problem["detail"]
    typed = {**alice.headers, "Content-Type": "application/json; charset=utf-8"}
    assert (await client.post(url, content=b'{"content": "hi"}', headers=typed)).status_code == 202
    untyped = await client.post(url, content=b'{"content": "again"}', headers=alice.headers)
    assert untyped.status_code == 202  # no Content-Type: read as JSON


async def test_a_sync_and_a_page_back_at_once_are_refused(
    client: httpx.AsyncClient, alice: ApiUser
) -> None:
    url = f"/api/threads/{await _thread(client, alice)}/messages"
    both = await client.get(
        url, params={"after_seq": 0, "before_position": 3}, headers=alice.headers
    )
    assert assert_problem(both, 400)["errors"][0]["field"] == "before_position"
    assert (
        await client.get(url, params={"after_seq": 0}, headers=alice.headers)
    ).status_code == 200


async def test_options_names_every_method_of_the_path(
    client: httpx.AsyncClient, alice: ApiUser
) -> None:
    thread = await _thread(client, alice)
    answer = await client.options(f"/api/threads/{thread}", headers=alice.headers)
    assert answer.headers["allow"] == "DELETE, GET, OPTIONS, PATCH"
    messages = await client.options(f"/api/threads/{thread}/messages", headers=alice.headers)
    assert messages.headers["allow"] == "GET, OPTIONS, POST"
