"""Validation problems name every bad field, and naive datetimes are refused clearly."""

from __future__ import annotations

import base64
from uuid import uuid4

import pytest
from httpx import AsyncClient
from sqlalchemy.ext.asyncio import AsyncSession

from tests.api.support import assert_problem
from tests.conftest import ApiUser
from tests.factories import TaskFactory


def _fields(problem: dict) -> dict[str, str]:
    return {error["field"]: error["message"] for error in problem["errors"]}


async def test_every_bad_field_of_a_body_is_listed(client: AsyncClient, alice: ApiUser) -> None:
    body = {"name": "n" * 101, "agent_type": "t" * 51, "model": 5, "colour": "red"}
    response = await client.post("/api/agents", json=body, headers=alice.headers)
    problem = assert_problem(response, 400)
    fields = _fields(problem)
    assert set(fields) == {"name", "agent_type", "model", "colour"}, problem
    assert "length <= 100" in fields["name"] and "unknown field" in fields["colour"]
    assert all(error["source"] == "body" for error in problem["errors"])
    for field in fields:
        assert field in problem["detail"]


async def test_missing_and_invalid_login_fields_are_all_listed(client: AsyncClient) -> None:
    problem = assert_problem(await client.post("/api/auth/token", json={"email": 5}), 400)
    assert _fields(problem).keys() == {"email", "password"}
    assert "missing required field" in _fields(problem)["password"]


async def test_one_bad_field_is_still_reported(client: AsyncClient, alice: ApiUser) -> None:
    url = f"/api/agents/{alice.agent.id}"
    problem = assert_problem(await client.patch(url, json={"name": ""}, headers=alice.headers), 400)
    assert _fields(problem).keys() == {"name"} and "name" in problem["detail"]


async def test_due_at_without_timezone_is_400_naming_the_field(
    client: AsyncClient, db: AsyncSession, alice: ApiUser
) -> None:
    task = TaskFactory.build(owner_id=alice.user.id, title="t")
    db.add(task)
    await db.commit()
    url = f"/api/tasks/{task.id}"

    naive = await client.patch(url, json={"due_at": "2030-01-02T09:00:00"}, headers=alice.headers)
    problem = assert_problem(naive, 400)
    assert "due_at must include a timezone" in problem["detail"]
    assert _fields(problem) == {"due_at": "must include a timezone"}

    year_one = {"due_at": "0001-01-01T00:00:00+01:00"}  # no UTC time: out of range
    far = assert_problem(await client.patch(url, json=year_one, headers=alice.headers), 400)
    assert "`due_at` must be a date between the years 1900 and 9000" in far["detail"]

    aware = await client.patch(url, json={"due_at": "2030-01-02T09:00:00Z"}, headers=alice.headers)
    assert aware.status_code == 200 and aware.json()["due_at"].startswith("2030-01-02T09:00:00")


@pytest.mark.parametrize("path", ["/api/tasks", "/api/threads"])
async def test_forged_cursor_with_a_naive_datetime_is_400(
    client: AsyncClient, alice: ApiUser, path: str
) -> None:
    key = f'["2030-01-02T09:00:00","{uuid4()}"]'.encode()
    cursor = base64.urlsafe_b64encode(key).decode().rstrip("=")
    response = await client.get(path, params={"cursor": cursor}, headers=alice.headers)
    assert "cursor" in assert_problem(response, 400)["detail"].lower()
