"""Every error an operation can answer, documented on it: a client decodes errors from
the document alone (docs/api.md, "For Swift developers").

Handlers name the statuses only they give (`problems(409)`: a name taken, `429`: a spent
budget). The statuses every operation of a kind can give are added here, from what the
operation is, so none is forgotten:

- 400: any malformed query, path or body (every operation of the API);
- 401: a missing, invalid, expired or revoked token (every operation that takes one);
- 404: an id in the path that is not yours, or no longer exists;
- 413 and 415: a body over MAX_REQUEST_BODY_BYTES, a body that is not JSON (every
  operation that takes a body);
- 503: the database did not answer (every operation: each reads or writes it).

Each is documented in the operation's own error shape: the schema of its 400 (RFC 9457
`ProblemDetail` under /api, OpenAI's error under /v1).
"""

from __future__ import annotations

import copy
from http import HTTPStatus
from typing import Any

METHODS = ("get", "put", "post", "patch", "delete")
# The paths whose operations answer errors; the health checks answer their own bodies.
API_PREFIXES = ("/api/", "/v1/")


def statuses_of(path: str, operation: dict[str, Any]) -> set[int]:
    """The error statuses any operation like this one can answer."""
    found = {400, 503}
    if operation.get("security"):
        found.add(401)
    if "{" in path:
        found.add(404)
    if "requestBody" in operation:
        found |= {413, 415}
    return found


def _error_response(operation: dict[str, Any], status: int) -> dict[str, Any] | None:
    template = operation.get("responses", {}).get("400")
    if template is None or "content" not in template:
        return None
    return {"description": HTTPStatus(status).phrase, "content": copy.deepcopy(template["content"])}


def with_problem_responses(document: dict[str, Any]) -> dict[str, Any]:
    """`document` with each operation's missing error responses added (see the module)."""
    for path, item in document.get("paths", {}).items():
        if not path.startswith(API_PREFIXES):
            continue
        for method in METHODS:
            operation = item.get(method)
            if operation is None:
                continue
            responses = operation.setdefault("responses", {})
            for status in sorted(statuses_of(path, operation)):
                if str(status) in responses:
                    continue
                if (response := _error_response(operation, status)) is not None:
                    responses[str(status)] = response
    return document
