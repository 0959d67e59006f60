"""Every date-time query parameter reads RFC 3339 only: a bare number (which a lenient
parser takes for seconds since 1970) is a 400, whatever the endpoint."""

from __future__ import annotations

import json

import httpx

from app.settings import PROJECT_ROOT
from tests.api.support import assert_problem
from tests.conftest import ApiUser


def _datetime_queries() -> list[tuple[str, str]]:
    spec = json.loads((PROJECT_ROOT / "openapi" / "openapi.json").read_text())
    found = []
    for path, operations in spec["paths"].items():
        for method, operation in operations.items():
            for parameter in operation.get("parameters", []):
                schema = json.dumps(parameter.get("schema", {}))
                if parameter["in"] == "query" and '"date-time"' in schema:
                    found.append((f"{method.upper()} {path}", parameter["name"]))
    return found


async def test_a_bare_number_for_a_date_time_query_parameter_is_refused(
    client: httpx.AsyncClient, alice: ApiUser
) -> None:
    queries = _datetime_queries()
    assert queries, "the spec names date-time query parameters"
    for operation, name in queries:
        method, path = operation.split(" ", 1)
        assert "{" not in path, f"{operation}: give the test an id to call it with"
        for bad in ("1700000000", "1700000000.5", "yesterday"):
            response = await client.request(method, path, params={name: bad}, headers=alice.headers)
            assert_problem(response, 400)
        good = await client.request(
            method, path, params={name: "2026-01-01T00:00:00Z"}, headers=alice.headers
        )
        assert good.status_code == 200, (operation, good.text)
