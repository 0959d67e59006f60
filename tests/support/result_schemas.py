"""Validate a tool call's `data` against the result schema GET /api/tools publishes for it."""

from __future__ import annotations

import json
import re
from functools import lru_cache
from typing import Any

from jsonschema import Draft202012Validator, FormatChecker

from app.openapi_export import OPENAPI_FILE

# What the app serves, and what Swift's `.iso8601` date decoding accepts: whole seconds, Z.
SERVED_TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ")
FORMATS = FormatChecker()


@FORMATS.checks("date-time")
def _served_time(value: object) -> bool:
    return not isinstance(value, str) or SERVED_TIME.fullmatch(value) is not None


@lru_cache(maxsize=1)
def _components() -> dict[str, Any]:
    return json.loads(OPENAPI_FILE.read_text())["components"]


def result_schema_errors(
    reference: dict[str, str], data: Any, components: dict[str, Any] | None = None
) -> list[str]:
    """Why `data` does not match the `$ref` (a result_schemas entry), resolved in the
    document's components (the committed openapi/openapi.json unless given)."""
    root = {**reference, "components": components or _components()}
    validator = Draft202012Validator(root, format_checker=FORMATS)
    return [f"{list(e.path)}: {e.message}" for e in validator.iter_errors(data)]


def assert_matches_result_schema(tool: str, action: str, data: Any) -> None:
    from app.tools.registry import get_registry

    [entry] = [e for e in get_registry().catalog() if e.name == tool]
    errors = result_schema_errors(entry.result_schemas[action], data)
    assert not errors, (tool, action, errors)
