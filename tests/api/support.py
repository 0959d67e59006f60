"""Small helpers for the API tests: create things through the API, check problems."""

from __future__ import annotations

from typing import Any

from httpx import AsyncClient, Response

from tests.conftest import ApiUser


def assert_problem(response: Response, status: int) -> dict[str, Any]:
    """An RFC 9457 problem with the given status: media type and members."""
    assert response.status_code == status, response.text[:500]
    assert response.headers["content-type"].startswith("application/problem+json")
    body = response.json()
    assert body["status"] == status
    assert body["type"] and body["title"]
    assert "detail" in body
    return body


async def create_thread(client: AsyncClient, user: ApiUser, title: str = "t") -> dict[str, Any]:
    response = await client.post(
        "/api/threads", json={"agent_id": str(user.agent.id), "title": title}, headers=user.headers
    )
    assert response.status_code == 201, response.text
    return response.json()


async def post_message(
    client: AsyncClient, user: ApiUser, thread_id: str, content: str = "hi", **extra: Any
) -> Response:
    return await client.post(
        f"/api/threads/{thread_id}/messages",
        json={"content": content, **extra},
        headers=user.headers,
    )
