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
    from app.tools.assembly import get_registry

    [entry] = [e for e in get_registry().catalog() if e.name == tool]
    errors = result_schema_errors(entry.result_schemas[action], data)
    assert not errors, (tool, action, errors)


TOOL_DATA = {"$ref": "#/components/schemas/ToolData"}


def cell_data_errors(
    activity: dict[str, Any], components: dict[str, Any] | None = None
) -> list[str]:
    """Why a cell's `data` is not what the documents declare for it: any data decodes as
    the union `ToolData`; a failed cell's is an `error`, a running one's `progress`, a
    waiting one has none; a successful builtin call's is its action's result type."""
    data, status = activity.get("data"), activity["status"]
    if data is None:
        return [] if status != "success" else ["a successful cell without data"]
    errors = result_schema_errors(TOOL_DATA, data, components)
    mapping = (components or _components())["schemas"]["ToolData"]["discriminator"]["mapping"]
    if isinstance(data, dict) and data.get("type") not in mapping:  # UnknownData is for apps
        errors.append(f"data of a type the union does not name: {data.get('type')!r}")
    expected = {"failure": "error", "in_progress": "progress"}.get(status)
    if status in ("awaiting_approval", "awaiting_device"):
        errors.append(f"a cell {status} with data {data!r}")
    elif expected is not None and data.get("type") != expected:
        errors.append(f"a cell {status} with data of type {data.get('type')!r}")
    elif (
        status == "success"
        and (declared := _declared_type(activity)) is not None
        and data.get("type") != declared
    ):
        errors.append(f"{activity['name']} returned {data.get('type')!r}, not {declared!r}")
    return errors


def _declared_type(activity: dict[str, Any]) -> str | None:
    """The `type` of the result Struct the tool declares for the cell's action, if any."""
    from app.tools.assembly import get_registry

    tool = get_registry().get(activity["name"])
    action = (activity.get("input") or {}).get("action")
    struct = tool.results.get(action) if tool is not None else None
    return None if struct is None else str(struct.__struct_config__.tag)


def assert_cells_match_schema(cells: list[dict[str, Any]]) -> None:
    """Every cell's data decodes as published (the cells of test-only tools aside)."""
    problems = {
        (cell["id"], cell["name"], cell["status"]): errors
        for cell in cells
        if not cell["name"].startswith("test_") and (errors := cell_data_errors(cell))
    }
    assert not problems, problems
