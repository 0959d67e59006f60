"""JSON Schemas of msgspec Structs published outside Litestar's own generation.

The websocket frames (openapi/asyncapi.json) and the tools' result schemas (`GET
/api/tools`, and components of openapi/openapi.json) are written by msgspec, not by
Litestar. `struct_components` brings msgspec's output to the forms the OpenAPI document
uses, so that one Swift (or Python) generator reads both:

- nullable fields in the forms of `app.lib.openapi.swift_ready` (`type: [T, "null"]`);
- a Literal's `enum` carries its `type`, a tagged Struct's tag is a `const`;
- a datetime is `format: date-time` (msgspec writes it only for `Meta(tz=True)`; every
  served time is UTC, `…Z`: `app.lib.schema.served_time`);
- a field of an `omit_defaults` Struct whose default is None is never sent as null (it
  is left out), so it is documented without null and not required (`omitted_null_fields`).
"""

from __future__ import annotations

import inspect
from collections.abc import Iterable, Iterator
from typing import Any

import msgspec

from app.lib.open_schemas import with_open_schemas
from app.lib.openapi import NULL_SCHEMA, swift_ready, with_property_refs

REF_TEMPLATE = "#/components/schemas/{name}"


def omitted_null_fields(struct: type) -> set[str]:
    """Encoded names of the fields `struct` leaves out instead of sending null."""
    config = getattr(struct, "__struct_config__", None)
    if config is None or not config.omit_defaults:
        return set()
    info = msgspec.inspect.type_info(struct)
    return {f.encode_name for f in info.fields if f.default is None}


def _branches(type_info: msgspec.inspect.Type) -> tuple[msgspec.inspect.Type, ...]:
    if isinstance(type_info, msgspec.inspect.UnionType):
        return type_info.types
    return (type_info,)


def _children(type_info: msgspec.inspect.Type) -> Iterator[msgspec.inspect.Type]:
    for branch in _branches(type_info):
        if isinstance(branch, msgspec.inspect.StructType):
            yield branch
        for attribute in ("item_type", "value_type"):
            if (inner := getattr(branch, attribute, None)) is not None:
                yield from _children(inner)


def _structs(roots: Iterable[type]) -> dict[str, msgspec.inspect.StructType]:
    """Every Struct reachable from `roots`, by component name (its class name)."""
    found: dict[str, msgspec.inspect.StructType] = {}
    pending = [msgspec.inspect.type_info(root) for root in roots]
    while pending:
        info = pending.pop()
        if not isinstance(info, msgspec.inspect.StructType) or info.cls.__name__ in found:
            continue
        found[info.cls.__name__] = info
        for field in info.fields:
            pending.extend(_children(field.type))
    return found


def _is_datetime(type_info: msgspec.inspect.Type) -> bool:
    return any(isinstance(b, msgspec.inspect.DateTimeType) for b in _branches(type_info))


def _without_null(schema: dict[str, Any]) -> dict[str, Any]:
    members = [m for m in schema.get("anyOf", ()) if m != NULL_SCHEMA]
    if len(members) == 1:
        rest = {k: v for k, v in schema.items() if k not in ("anyOf", "default")}
        return {**members[0], **rest}
    return {k: v for k, v in schema.items() if k != "default"}


def struct_components(roots: Iterable[type]) -> dict[str, dict[str, Any]]:
    """Component schemas (by class name) of `roots` and every Struct they contain."""
    roots = list(roots)
    _, schemas = msgspec.json.schema_components(roots, ref_template=REF_TEMPLATE)
    for name, info in _structs(roots).items():
        if "description" in schemas[name]:  # a docstring's indentation is not its text
            schemas[name]["description"] = inspect.cleandoc(schemas[name]["description"])
        properties = schemas[name].get("properties", {})
        if info.tag_field is not None:  # msgspec writes `enum: [tag]`; a const says "one value"
            properties[info.tag_field] = {"type": "string", "const": info.tag}
        omitted = omitted_null_fields(info.cls)
        for field in info.fields:
            prop = properties[field.encode_name]
            if _is_datetime(field.type):
                for member in prop.get("anyOf", [prop]):
                    if member.get("type") == "string":
                        member["format"] = "date-time"
            if field.encode_name in omitted:
                properties[field.encode_name] = _without_null(prop)
    return with_open_schemas(with_property_refs(swift_ready(_typed_enums(schemas))))


def _typed_enums(node: Any) -> Any:
    """msgspec writes a Literal as a bare `enum`; generators need its `type` to make an enum."""
    if isinstance(node, list):
        return [_typed_enums(value) for value in node]
    if not isinstance(node, dict):
        return node
    node = {key: _typed_enums(value) for key, value in node.items()}
    values = node.get("enum", [node["const"]] if "const" in node else None)
    if values is not None and "type" not in node:
        kinds = {type(v) for v in values if v is not None}
        node["type"] = "string" if kinds == {str} else "integer" if kinds == {int} else None
        if node["type"] is None:
            del node["type"]
    return node


def tagged_union(
    structs: list[type],
    description: str,
    *,
    fallback: str | None = None,
    fallback_member: str | None = None,
) -> dict[str, Any]:
    """One schema for Structs tagged by `type`: `oneOf` their `$ref`s with a
    `discriminator`, so generators make an enum with a case per Struct (not one struct of
    optionals). `fallback` makes the union open: documented as what a client does with
    a `type` it does not know (`x-fallback`, a schema every member and future one fits).
    `fallback_member` names the component (`unknown_member`) that such a `type` decodes
    into, added last: generators that try each member in turn (openapi-python-client)
    reach it only when no known one fits. It has no `mapping` entry: no one value is its."""

    def ref(struct: type) -> str:
        return REF_TEMPLATE.format(name=struct.__name__)

    members = [{"$ref": ref(s)} for s in structs]
    if fallback_member is not None:
        members.append({"$ref": REF_TEMPLATE.format(name=fallback_member)})
    union: dict[str, Any] = {
        "description": description,
        "oneOf": members,
        "discriminator": {
            "propertyName": "type",
            "mapping": {str(s.__struct_config__.tag): ref(s) for s in structs},  # type: ignore[attr-defined]
        },
    }
    if fallback is not None:
        union["description"] = f"{description} Open: {fallback}"
        union["x-fallback"] = {
            "type": "object",
            "description": fallback,
            "properties": {"type": {"type": "string"}},
            "required": ["type"],
        }
    return union


def unknown_member(structs: list[type], title: str, description: str) -> dict[str, Any]:
    """The member of an open union tagged by `type` that a `type` none of `structs` has
    decodes into: its `type` a string other than theirs (so `oneOf` still matches exactly
    one member), every other key kept (`additionalProperties`)."""
    known = sorted(str(s.__struct_config__.tag) for s in structs)  # type: ignore[attr-defined]
    return {
        "type": "object",
        "title": title,
        "description": description,
        "properties": {"type": {"type": "string", "not": {"type": "string", "enum": known}}},
        "required": ["type"],
        "additionalProperties": {},
    }
