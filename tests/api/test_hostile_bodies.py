"""Request bodies that cannot be decoded are a 400 problem naming why, never a 500."""

from __future__ import annotations

import pytest
from httpx import AsyncClient

from tests.api.support import assert_problem, create_thread
from tests.conftest import ApiUser

INVALID_UTF8 = {
    "in a string": b'{"content": "caf\xe9"}',
    "in a key": b'{"\xff\xfe": 1}',
}
# Well within the body size limit, far deeper than any real request.
TOO_DEEP = {
    "arrays": b"[" * 10_000,
    "objects": b'{"a":' * 5_000 + b"1" + b"}" * 5_000,
}


async def _targets(client: AsyncClient, user: ApiUser) -> list[tuple[str, str, dict[str, str]]]:
    """Each (method, url, headers) that takes a JSON body, before and after login."""
    thread_id = (await create_thread(client, user))["id"]
    json = {"content-type": "application/json"}
    authed = {**user.headers, **json}
    return [
        ("POST", "/api/auth/token", json),
        ("POST", "/api/threads", authed),
        ("POST", f"/api/threads/{thread_id}/messages", authed),
        ("PATCH", f"/api/agents/{user.agent.id}", authed),
    ]


@pytest.mark.parametrize(
    ("bodies", "detail"),
    [(INVALID_UTF8, "not valid UTF-8"), (TOO_DEEP, "nested too deeply")],
    ids=["invalid-utf8", "too-deep"],
)
async def test_undecodable_bodies_are_400_problems(
    client: AsyncClient, alice: ApiUser, bodies: dict[str, bytes], detail: str
) -> None:
    for method, url, headers in await _targets(client, alice):
        for name, body in bodies.items():
            response = await client.request(method, url, content=body, headers=headers)
            problem = assert_problem(response, 400)
            assert detail in problem["detail"], (method, url, name, problem)


async def test_a_body_that_is_not_json_is_a_415_problem_after_the_token(
    client: AsyncClient, alice: ApiUser
) -> None:
    """Every operation taking a body: another media type is a 415 (a form, text), never
    read as JSON; no Content-Type is read as JSON; a bad token is a 401 first."""
    body = b'{"title": "Renamed"}'
    for method, url, headers in await _targets(client, alice):
        for media in ("text/plain", "application/x-www-form-urlencoded"):
            sent = {**headers, "content-type": media}
            response = await client.request(method, url, content=body, headers=sent)
            problem = assert_problem(response, 415)
            assert media in problem["detail"], (method, url, problem)
    thread_id = (await create_thread(client, alice))["id"]
    url = f"/api/threads/{thread_id}"
    bare = await client.patch(url, content=body, headers=alice.headers)  # no Content-Type
    assert bare.status_code == 200, bare.text
    typed = {**alice.headers, "content-type": "application/merge-patch+json; charset=utf-8"}
    assert (await client.patch(url, content=body, headers=typed)).status_code == 200
    stranger = {"authorization": "Bearer nope", "content-type": "text/plain"}
    assert_problem(await client.patch(url, content=body, headers=stranger), 401)
