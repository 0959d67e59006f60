"""Validate a model's tool call before anything runs.

Every failure is a self-correcting `validation_error` result (never an exception): it says
what was wrong and what would be right (allowed_actions, required_param with an example
call, field-by-field errors for wrong types, nested objects and arrays included).
"""

from __future__ import annotations

import types
import typing
from typing import Any

import msgspec

from app.tools.base import Tool, ToolResult
from app.tools.schema import action_fields, struct_fields

ParsedCall = tuple[Tool, str, msgspec.Struct]


# Our tools' parameters are a few levels deep; far deeper JSON is hostile (the decoder and
# every later encoder recurse) and is refused before anything else looks at it.
MAX_ARGUMENT_DEPTH = 32
NUL = "\x00"
_ONE_OBJECT = 'Send the arguments as one JSON object, e.g. {"action": "…", …}.'


def _one_object(example: str | None) -> str:
    """The suggestion for arguments that are not one JSON object: a tool without an
    `action` (ask_*) passes its own example, lest the model add an `action`."""
    return (
        _ONE_OBJECT
        if example is None
        else f"Send the arguments as one JSON object, e.g. {example}."
    )


def _decode(
    arguments: str | bytes | dict[str, Any] | None, example: str | None = None
) -> dict[str, Any] | ToolResult:
    if arguments is None or arguments == "":
        return {}
    if isinstance(arguments, dict):
        decoded: Any = arguments
    else:
        try:
            decoded = msgspec.json.decode(arguments)
        except msgspec.DecodeError as exc:
            return ToolResult.failure(
                f"Arguments are not valid JSON ({exc}).",
                "validation_error",
                suggestion=_one_object(example),
            )
        except RecursionError:
            return _too_deep()
    if not isinstance(decoded, dict):
        return ToolResult.failure(
            f"Arguments must be a JSON object, not {type(decoded).__name__}.",
            "validation_error",
            suggestion=_one_object(example),
        )
    if _depth(decoded) > MAX_ARGUMENT_DEPTH:
        return _too_deep()
    return decoded


def _too_deep() -> ToolResult:
    return ToolResult.failure(
        f"Arguments are nested too deeply (more than {MAX_ARGUMENT_DEPTH} levels of arrays "
        "and objects).",
        "validation_error",
        suggestion="Send flat parameters as the tool's schema describes them.",
    )


def _children(value: Any) -> list[Any]:
    if isinstance(value, dict):
        return [*value.keys(), *value.values()]
    if isinstance(value, list | tuple):
        return list(value)
    return []


def _depth(value: Any) -> int:
    """Nesting depth, walked without recursion (stops counting past the limit)."""
    deepest, level = 0, [value]
    while level and deepest <= MAX_ARGUMENT_DEPTH:
        deepest += 1
        level = [child for node in level for child in _children(node)
                 if isinstance(child, dict | list | tuple)]  # fmt: skip
    return deepest


def _nul_field(args: dict[str, Any]) -> str | None:
    """The first parameter holding a NUL character anywhere inside it (key or value)."""
    for name, value in args.items():
        pending = [name, value]
        while pending:
            item = pending.pop()
            if isinstance(item, str) and NUL in item:
                return str(name).replace(NUL, "")
            pending.extend(_children(item))
    return None


def without_nul(value: Any) -> Any:
    """The value with NUL characters replaced (U+FFFD): storable in PostgreSQL text and
    jsonb (which refuse NUL) as on SQLite. Tools' arguments and results are shallow."""
    if isinstance(value, str):
        return value.replace(NUL, "\ufffd") if NUL in value else value
    if isinstance(value, dict):
        return {without_nul(k): without_nul(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [without_nul(v) for v in value]
    return value


def decode_arguments(
    arguments: str | bytes | dict[str, Any] | None, *, example: str | None = None
) -> dict[str, Any] | ToolResult:
    """The arguments as a JSON object that can be stored and shown (`tool_activity.input`):
    NUL characters replaced; invalid, non-object or too deeply nested JSON is an error
    (suggesting `example`, by default an action tool's call)."""
    decoded = _decode(arguments, example)
    return decoded if isinstance(decoded, ToolResult) else without_nul(decoded)


def _check_text(args: dict[str, Any]) -> ToolResult | None:
    field = _nul_field(args)
    if field is None:
        return None
    return ToolResult.failure(
        f"{field} contains a NUL character (\\u0000), which cannot be stored.",
        "validation_error",
        suggestion=f"Call again without the NUL character in {field}.",
        errors=[{"field": field, "message": "contains a NUL character (\\u0000)"}],
    )


def _check_action(tool: Tool, args: dict[str, Any]) -> str | ToolResult:
    allowed = list(tool.actions)
    action = args.get("action")
    if action is None:
        return ToolResult.failure(
            "action is required.",
            "validation_error",
            suggestion=f"Start the call with action, one of: {', '.join(allowed)}.",
            allowed_actions=allowed,
            required_param="action",
            example=tool.example_call(allowed[0]),
        )
    if not isinstance(action, str) or action not in tool.actions:
        return ToolResult.failure(
            f"Invalid action {action!r} for {tool.name}.",
            "validation_error",
            suggestion=f"Use one of: {', '.join(allowed)}.",
            allowed_actions=allowed,
        )
    return action


def _field_error(field: str, exc: msgspec.ValidationError) -> dict[str, str]:
    message = str(exc)
    # msgspec reports the path inside the value as "- at `$[0].name`"; anchor it at the field.
    path = field
    if " - at `$" in message:
        message, _, at = message.partition(" - at `$")
        path = field + at.rstrip("`")
    return {"field": path, "message": message}


def _as_text(value: Any) -> str:
    return value if isinstance(value, str) else msgspec.json.encode(value).decode()


def _literal_values(tp: Any) -> list[Any]:
    """Allowed values when a parameter is (an optional, annotated) Literal."""
    origin = typing.get_origin(tp)
    if origin is typing.Literal:
        return list(typing.get_args(tp))
    if origin is typing.Annotated:
        return _literal_values(typing.get_args(tp)[0])
    if origin in (typing.Union, types.UnionType):
        return [v for arg in typing.get_args(tp) for v in _literal_values(arg)]
    return []


def _other_action_params(tool: Tool, action: str) -> set[str]:
    names: set[str] = set()
    for other, struct in tool.actions.items():
        if other != action:
            names.update(action_fields(struct))
    return names


def check_params(tool: Tool, action: str, args: dict[str, Any]) -> msgspec.Struct | ToolResult:
    struct = tool.actions[action]
    fields = {f.encode_name: f for f in struct_fields(struct)}
    required = action_fields(struct)
    given = {k: v for k, v in args.items() if k != "action"}
    # Strict-mode models send null for parameters they do not use: null means absent.
    present = {k: v for k, v in given.items() if v is not None}
    missing = [name for name, req in required.items() if req and name not in present]
    if missing:
        return ToolResult.failure(
            f"{missing[0]} is required for {action} action.",
            "validation_error",
            suggestion=f"Call again with {', '.join(missing)}.",
            action=action,
            required_param=missing[0],
            missing_params=missing,
            allowed_actions=list(tool.actions),
            example=tool.example_call(action),
        )
    errors: list[dict[str, Any]] = []
    others = _other_action_params(tool, action)
    for name, value in present.items():
        if name not in fields:
            hint = f"not used by {action}" if name in others else "unknown parameter"
            errors.append({"field": name, "message": hint})
            continue
        try:
            msgspec.convert(value, fields[name].type, strict=True)
        except msgspec.ValidationError as exc:
            error: dict[str, Any] = _field_error(name, exc)
            if allowed_values := _literal_values(fields[name].type):
                error["allowed_values"] = [_as_text(v) for v in allowed_values]
            errors.append(error)
    if errors:
        listing = "; ".join(f"{e['field']}: {e['message']}" for e in errors)
        return ToolResult.failure(
            f"Invalid parameters for {tool.name}.{action}: {listing}.",
            "validation_error",
            suggestion=f"Fix the listed fields. Parameters of {action}: {', '.join(fields)}.",
            action=action,
            errors=errors,
            allowed_params=list(fields),
            example=tool.example_call(action),
        )
    known = {k: v for k, v in present.items() if k in fields}
    try:
        return msgspec.convert(known, struct, strict=True)
    except msgspec.ValidationError as exc:  # cross-field checks in __post_init__
        return ToolResult.failure(
            str(exc), "validation_error", action=action, example=tool.example_call(action)
        )


def validate_call(
    tool: Tool,
    arguments: str | bytes | dict[str, Any] | None,
    only: frozenset[str] | None = None,
) -> ParsedCall | ToolResult:
    """`only`: the actions this agent may use (its enabled_tools name some actions of the
    tool only); another one is refused, naming them."""
    checked = _validate_call(tool, arguments)
    if only is not None and not isinstance(checked, ToolResult) and checked[1] not in only:
        allowed = [action for action in tool.actions if action in only]
        checked = ToolResult.failure(
            f"{tool.name}.{checked[1]} is not allowed for this agent.",
            "permission_error",
            suggestion=f"Use one of: {', '.join(allowed)}, or answer without it.",
            allowed_actions=allowed,
        )
    if isinstance(checked, ToolResult) and tool.validation_hints:
        # what the tool adds to every refusal (self_authoring: its allowed_fields)
        checked.details = {**tool.validation_hints, **(checked.details or {})}
    return checked


def _validate_call(
    tool: Tool, arguments: str | bytes | dict[str, Any] | None
) -> ParsedCall | ToolResult:
    args = _decode(arguments)
    if isinstance(args, ToolResult):
        return args
    nul = _check_text(args)
    if nul is not None:
        return nul
    own = tool.check_arguments(args)  # a JSON-Schema tool (MCP) checks its own arguments
    if own is not None:
        return own if isinstance(own, ToolResult) else (tool, *own)
    action = _check_action(tool, args)
    if isinstance(action, ToolResult):
        return action
    params = check_params(tool, action, args)
    if isinstance(params, ToolResult):
        return params
    return tool, action, params


def unknown_tool(name: str, available: list[str]) -> ToolResult:
    return ToolResult.failure(
        f"Unknown tool {name!r}.",
        "validation_error",
        suggestion=f"Use one of the available tools: {', '.join(available) or 'none'}.",
        available_tools=available,
    )


def not_allowed(name: str, available: list[str]) -> ToolResult:
    """A known tool the call may not use: this request's allow-list (`tools`) or the
    agent's toolset leaves it out."""
    return ToolResult.failure(
        f"{name!r} is not allowed for this request.",
        "permission_error",
        suggestion=f"Use one of the allowed tools: {', '.join(available) or 'none'}.",
        available_tools=available,
    )
