"""JSON Schema for a domain tool, generated from its per-action parameter Structs.

The model sees one flat object: `action` (an enum) plus the union of every action's
parameters. It is strict-mode friendly (OpenAI structured outputs): every property is
listed in `required`, `additionalProperties` is false, and parameters an action does not
need accept null. Which parameters each action requires is said in the descriptions and
enforced by app/tools/validation.py.
"""

from __future__ import annotations

import copy
import functools
from typing import Any

import msgspec

REF_TEMPLATE = "#/$defs/{name}"


@functools.cache
def struct_fields(struct: type[msgspec.Struct]) -> tuple[msgspec.structs.FieldInfo, ...]:
    """`msgspec.structs.fields`, once per class: it evaluates the annotations on every call
    (~0.2 ms each, five times per validated tool call before this was cached)."""
    return msgspec.structs.fields(struct)


def action_fields(struct: type[msgspec.Struct]) -> dict[str, bool]:
    """Field name -> required, in declaration order."""
    return dict(_action_fields(struct))


@functools.cache
def _action_fields(struct: type[msgspec.Struct]) -> tuple[tuple[str, bool], ...]:
    return tuple(
        (f.encode_name, f.default is msgspec.NODEFAULT and f.default_factory is msgspec.NODEFAULT)
        for f in struct_fields(struct)
    )


def _strip_titles(schema: Any) -> Any:
    if isinstance(schema, dict):
        # "title" the keyword (a string), not a property that happens to be called title
        return {
            k: _strip_titles(v)
            for k, v in schema.items()
            if not (k == "title" and isinstance(v, str))
        }
    if isinstance(schema, list):
        return [_strip_titles(v) for v in schema]
    return schema


def _without_null(prop: dict[str, Any]) -> dict[str, Any]:
    """`T | None` from msgspec is anyOf [T, null]; keep T and its description."""
    variants = prop.get("anyOf")
    if not variants:
        return prop
    rest = [v for v in variants if v != {"type": "null"}]
    if len(rest) == len(variants):
        return prop
    base = {k: v for k, v in prop.items() if k not in ("anyOf", "default")}
    if len(rest) == 1:
        return {**base, **rest[0]}
    return {**base, "anyOf": rest}


def _nullable(prop: dict[str, Any]) -> dict[str, Any]:
    description = prop.get("description")
    core = {k: v for k, v in prop.items() if k != "description"}
    out: dict[str, Any] = {"anyOf": [core, {"type": "null"}]}
    if description:
        out["description"] = description
    return out


def _combine(first: dict[str, Any], other: dict[str, Any]) -> dict[str, Any]:
    """One property used by several actions with different schemas (e.g. a wider enum)."""
    strip = lambda p: {k: v for k, v in p.items() if k != "description"}  # noqa: E731
    a, b = strip(first), strip(other)
    if a == b:
        return first
    description = {"description": first["description"]} if "description" in first else {}
    if set(a) == set(b) == {"enum"}:
        return {"enum": list(dict.fromkeys([*a["enum"], *b["enum"]])), **description}
    variants = [*a.get("anyOf", [a]), b]
    return {"anyOf": variants, **description}


def _usage_note(required_in: list[str], optional_in: list[str]) -> str:
    parts = []
    if required_in:
        parts.append(f"required for {', '.join(required_in)}")
    if optional_in:
        parts.append(f"optional for {', '.join(optional_in)}")
    return "; ".join(parts).capitalize() + "."


def merged_parameters_schema(actions: dict[str, type[msgspec.Struct]]) -> dict[str, Any]:
    structs = list(actions.values())
    (_, components) = msgspec.json.schema_components(structs, ref_template=REF_TEMPLATE)
    components = _strip_titles(components)
    properties: dict[str, Any] = {
        "action": {
            "type": "string",
            "enum": list(actions),
            "description": f"What to do: one of {', '.join(actions)}.",
        }
    }
    usage: dict[str, tuple[list[str], list[str]]] = {}
    for action, struct in actions.items():
        component = components[struct.__name__]
        for name, required in action_fields(struct).items():
            usage.setdefault(name, ([], []))[0 if required else 1].append(action)
            prop = _without_null(copy.deepcopy(component["properties"][name]))
            prop.pop("default", None)
            properties[name] = _combine(properties[name], prop) if name in properties else prop
    for name, (required_in, optional_in) in usage.items():
        prop = properties[name]
        note = _usage_note(required_in, optional_in)
        prop["description"] = f"{prop['description']} {note}" if "description" in prop else note
        properties[name] = _nullable(prop)
    schema: dict[str, Any] = {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }
    nested = {k: v for k, v in components.items() if k not in {s.__name__ for s in structs}}
    if nested:
        schema["$defs"] = nested
    return schema


HINT_MAX_CHARS = 160


def _accepts_null(prop: dict[str, Any]) -> bool:
    types = prop.get("type")
    if types == "null" or (isinstance(types, list) and "null" in types):
        return True
    return any(_accepts_null(v) for v in prop.get("anyOf", []) if isinstance(v, dict))


def params_hint(schema: dict[str, Any]) -> str:
    """One line naming the parameters: `action: create|list, title?, due_at?`.

    An enum shows its values; a parameter that may be left out (not required, or
    accepting null) gets a `?`."""
    properties: dict[str, Any] = schema.get("properties") or {}
    required = set(schema.get("required") or [])
    parts = []
    for name, prop in properties.items():
        optional = name not in required or _accepts_null(prop)
        enum = prop.get("enum")
        label = f"{name}{'?' if optional else ''}"
        parts.append(f"{label}: {'|'.join(map(str, enum))}" if enum else label)
    hint = ", ".join(parts)
    return hint if len(hint) <= HINT_MAX_CHARS else hint[: HINT_MAX_CHARS - 1] + "…"


def narrow_actions(parameters: dict[str, Any], only: frozenset[str]) -> dict[str, Any]:
    """A copy of the tool's JSON Schema with its `action` enum cut to `only` (an agent
    allowed some actions of the tool only is offered only those)."""
    action = (parameters.get("properties") or {}).get("action")
    if not isinstance(action, dict) or not isinstance(action.get("enum"), list):
        return parameters
    enum = [name for name in action["enum"] if name in only]
    narrowed = {**action, "enum": enum, "description": f"What to do: one of {', '.join(enum)}."}
    return {**parameters, "properties": {**parameters["properties"], "action": narrowed}}
