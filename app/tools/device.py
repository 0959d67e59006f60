"""Device tools: tools the phone runs (location, calendar, contacts, HealthKit, photos).

They are declared in the agent-types file with JSON Schemas (`device_tools:`), offered to
the model like any tool, and never run on the server: the call's cell waits as
`awaiting_device` until the app posts the result (or the call expires). This module is
the contract: the declaration, and the check of the model's arguments against it (the
JSON Schema checks themselves, shared with MCP tools: json_schema.py).
"""

from __future__ import annotations

import re
from typing import Annotated, Any

import msgspec

from app.tools.base import ToolResult, function_definition
from app.tools.json_schema import invalid_arguments, schema_problem
from app.tools.validation import decode_arguments

NAME_PATTERN = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")  # what model providers accept


class DeviceToolSpec(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """One device tool as the agent-types file declares it."""

    name: str = ""
    description: str
    parameters: dict[str, Any] = msgspec.field(
        default_factory=lambda: {"type": "object", "properties": {}}
    )
    # The output the app must post; checked before the run continues (None: any object).
    result_schema: dict[str, Any] | None = None
    # How long the call waits for the phone before it fails with `timeout`.
    timeout_seconds: Annotated[float, msgspec.Meta(gt=0, le=86400)] = 600
    is_user_facing: bool = True

    def function_definition(self) -> dict[str, Any]:
        return function_definition(self.name, self.description, self.parameters)


def declaration_problem(spec: DeviceToolSpec) -> str | None:
    if not NAME_PATTERN.match(spec.name):
        return f"device tool name {spec.name!r} must match {NAME_PATTERN.pattern}"
    problem = schema_problem(spec.parameters, f"device tool {spec.name!r}: parameters")
    if problem is None and spec.result_schema is not None:
        problem = schema_problem(spec.result_schema, f"device tool {spec.name!r}: result_schema")
    return problem


def validate_device_call(
    spec: DeviceToolSpec, arguments: str | bytes | dict[str, Any] | None
) -> dict[str, Any] | ToolResult:
    """The model's arguments as the phone will get them, or a self-correcting error."""
    decoded = decode_arguments(arguments)
    if isinstance(decoded, ToolResult):
        return decoded
    return invalid_arguments(spec.name, spec.parameters, decoded) or decoded
