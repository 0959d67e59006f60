"""A request in a form the API does not take gets the documented answer: a body that is
not JSON is a 415 (not "JSON is malformed"), a sync and a page back at once a 400; HEAD
answers as GET without the body, and OPTIONS names every method of the path."""

from __future__ import annotations

from uuid import uuid4

import httpx
from litestar import Litestar

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
    assert answer.headers["allow"] == "DELETE, GET, HEAD, OPTIONS, PATCH"
    messages = await client.options(f"/api/threads/{thread}/messages", headers=alice.headers)
    assert messages.headers["allow"] == "GET, HEAD, OPTIONS, POST"
    uploads = await client.options("/api/attachments", headers=alice.headers)
    assert uploads.headers["allow"] == "OPTIONS, POST"  # no GET: no HEAD


# Headers that differ between two answers to one request: when, and which request.
PER_REQUEST = {"date", "x-request-id"}


def _headers(answer: httpx.Response) -> dict[str, str]:
    return {k: v for k, v in answer.headers.items() if k not in PER_REQUEST}


async def test_head_answers_as_get_without_the_body(
    client: httpx.AsyncClient, alice: ApiUser
) -> None:
    thread = await _thread(client, alice)
    for url, headers, status in (
        (f"/api/threads/{thread}", alice.headers, 200),
        (f"/api/threads/{thread}/messages?after_seq=0", alice.headers, 200),
        (f"/api/threads/{uuid4()}", alice.headers, 404),
        ("/api/agents", {}, 401),
        ("/api/health", {}, 200),
    ):
        got = await client.get(url, headers=headers)
        head = await client.head(url, headers=headers)
        assert (got.status_code, head.status_code) == (status, status), url
        assert head.content == b"" and got.content != b"", url
        assert _headers(head) == _headers(got), url
        assert head.headers["content-length"] == str(len(got.content)), url


async def test_head_where_there_is_no_get_is_not_allowed(
    client: httpx.AsyncClient, alice: ApiUser
) -> None:
    head = await client.head("/api/attachments", headers=alice.headers)
    assert head.status_code == 405 and head.content == b""
    assert set(head.headers["allow"].split(", ")) == {"OPTIONS", "POST"}


def test_no_route_of_ours_declares_head(app: Litestar) -> None:
    """HEAD is served as the GET (app/lib/head_requests.py): a route's own HEAD handler
    would never be reached. Litestar's static files (the docs' assets) declare one that
    answers what their GET answers, without the body: the same answer."""
    declared = {p for p, methods in app.route_handler_method_map.items() if "HEAD" in methods}
    assert declared <= {"/schema/assets/{file_path:path}"}
