"""Checks against JSON Schemas our code did not write: device tools' declarations (their
parameters and the output the phone posts), MCP servers' input schemas, and the schemas
of questions an MCP server asks the user. Our own tools' arguments are msgspec Structs
(validation.py).
"""

from __future__ import annotations

from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError

from app.tools.base import ToolResult

MAX_FIELD_ERRORS = 20


def schema_problem(schema: dict[str, Any], what: str) -> str | None:
    """Why `schema` is not a usable JSON Schema for an object, or None."""
    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as exc:
        return f"{what} is not a valid JSON Schema: {exc.message}"
    if schema.get("type") != "object":
        return f'{what} must describe an object ("type": "object").'
    return None


def schema_errors(schema: dict[str, Any] | None, value: Any) -> list[dict[str, str]]:
    """Every way `value` breaks `schema`, as field errors (`field`, `message`); [] if none."""
    if schema is None:
        return []
    validator = Draft202012Validator(schema)
    errors = sorted(validator.iter_errors(value), key=lambda e: list(e.absolute_path))
    return [
        {
            "field": ".".join(str(part) for part in error.absolute_path) or "$",
            "message": error.message,
        }
        for error in errors[:MAX_FIELD_ERRORS]
    ]


def invalid_arguments(tool: str, schema: dict[str, Any], args: Any) -> ToolResult | None:
    """The self-correcting error for a model's arguments that break `schema`, or None."""
    errors = schema_errors(schema, args)
    if not errors:
        return None
    return ToolResult.failure(
        f"Invalid arguments for {tool}: "
        + "; ".join(f"{e['field']}: {e['message']}" for e in errors),
        "validation_error",
        suggestion="Call it again with arguments matching its parameters schema.",
        errors=errors,
        parameters=schema,
    )
