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
