"""Every kind of cell `data`: the union `ToolData` that openapi/openapi.json and
openapi/asyncapi.json publish for `tool_activity.data`.

A tool's own results are declared in its `Tool.results` (tasks, web, memory, …); this
module adds the kinds that are not one tool's: a running call's progress, a failed call's
error, a specialist's answer (`ask_*`), a device tool's output, an MCP tool's result.
Each is a `ToolData` Struct tagged by `type`, and the data is built through it, so the
published schema is the data's own.
"""

from __future__ import annotations

import logging
from typing import Any

import msgspec

from app.tools.base import ToolData
from app.tools.errors import ErrorType

logger = logging.getLogger(__name__)
UNSET = msgspec.UNSET
Unset = msgspec.UnsetType


class InputRequest(msgspec.Struct, kw_only=True, omit_defaults=True):
    """What a running call asks the user (`awaiting_input` cells): the MCP server's
    message and, in `form` mode, the JSON Schema of the answer (`url` mode: a page to
    open)."""

    server: str
    tool: str
    message: str
    mode: str  # form | url (open: more may come)
    requested_schema: dict[str, Any] | Unset = UNSET
    url: str | Unset = UNSET


class InputResponse(msgspec.Struct, kw_only=True, omit_defaults=True):
    """The user's answer, until the call takes it back to the server."""

    action: str  # accept | decline | cancel
    content: dict[str, Any] | None = None


class ToolProgress(ToolData, tag="progress"):
    """A running call's progress (`in_progress` cells): what the tool reported so far;
    while it waits for the user (`awaiting_input`), what it asks (`input_request`)."""

    url: str | Unset = UNSET  # web.fetch: the page being read
    bytes_received: int | Unset = UNSET  # web.fetch: the body so far
    bytes_total: int | Unset | None = UNSET  # web.fetch: the Content-Length, if sent
    progress: float | Unset = UNSET  # an MCP server's progress notification
    total: float | Unset | None = UNSET
    input_request: InputRequest | Unset = UNSET
    input_response: InputResponse | Unset = UNSET


class ToolFieldError(msgspec.Struct, kw_only=True, omit_defaults=True):
    """One bad argument of a refused call (`errors` of a `validation_error`)."""

    field: str | None = None
    message: str
    # The values the parameter takes, each as text (a number or a boolean in its JSON
    # form: "3", "true"): one type, so every generated client decodes the list.
    allowed_values: list[str] | None = None
    source: str | None = None


class ToolError(ToolData, tag="error"):
    """A failed call (`failure` cells): the error the model read, with its hints.

    `error` and `error_type` repeat the cell's own. The hints say what would be right
    (`suggestion`, `allowed_actions`, `required_param`, `example`, `errors`, …); a tool
    may add others of its own (`query`, `url`, `field`, …), so more keys can appear.
    """

    error: str
    error_type: ErrorType
    suggestion: str | Unset = UNSET
    allowed_actions: list[str] | Unset = UNSET
    required_param: str | Unset = UNSET
    example: dict[str, Any] | Unset = UNSET
    available_tools: list[str] | Unset = UNSET
    allowed_fields: list[str] | Unset = UNSET
    errors: list[ToolFieldError] | Unset = UNSET
    action: str | Unset = UNSET  # the action the refused call named
    missing_params: list[str] | Unset = UNSET  # required and not given
    allowed_params: list[str] | Unset = UNSET  # the parameters the action takes
    required_params: dict[str, list[str]] | Unset = UNSET  # action -> what it requires


class DelegationResult(ToolData, tag="delegation_result"):
    """A specialist's answer to an `ask_<specialist>` call."""

    answer: str
    agent_name: str


class DeviceToolOutput(ToolData, tag="device_result"):
    """A device tool's output as the phone posted it (`result` matches the tool's
    `result_schema` in GET /api/tools)."""

    tool: str
    result: dict[str, Any]


def error_data(
    error: str,
    error_type: str,
    suggestion: str | None = None,
    details: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A failed call's `data`: the tool's hints (its own keys kept), then the error."""
    core = {"error": error, "error_type": error_type}
    if suggestion:
        core["suggestion"] = suggestion
    try:
        data = msgspec.convert({**(details or {}), **core}, ToolError)
    except msgspec.ValidationError:  # a hint of another shape: kept as the tool gave it
        logger.warning("error hints of another shape: %s", sorted(details or {}))
        data = msgspec.convert(core, ToolError)
    return {**(details or {}), **msgspec.to_builtins(data)}
