"""The OpenAPI document as served and exported: nullability Swift generators read, the
schemas' published marks (property references, named items; the open sets of
app/lib/open_schemas.py), and the forms the tests forbid.

Litestar documents `X | None` as `oneOf: [X, {type: null}]`. Apple's
swift-openapi-generator skips any schema with a `{type: null}` member (its issues #286,
#817, #950) and so drops the property from the generated struct. `SwiftReadyOpenAPIConfig`
rewrites the finished document, in one pass, into the forms swift-openapi-generator,
openapi-generator (swift6) and openapi-python-client all read: `type: [T, "null"]`, with
null among an `enum`'s values. A nullable `$ref` has no such form (`anyOf: [{$ref},
{type: null}]` is skipped too): a response Struct with `omit_defaults` leaves such a field
out of the body instead, documented as an optional `$ref` (`OmittedNullStructSchemaPlugin`
of app/lib/openapi_plugins.py, with the other schema plugins).
`SWIFT_REJECTED_FORMS` lists what the tests forbid, in this document and in
openapi/asyncapi.json.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from dataclasses import field as dataclass_field
from typing import TYPE_CHECKING, Any

from litestar.openapi import OpenAPIConfig
from litestar.openapi.spec import OpenAPI

from app.lib.open_schemas import with_open_schemas
from app.lib.openapi_docs import documented
from app.lib.openapi_problems import with_problem_responses

if TYPE_CHECKING:
    from collections.abc import Iterator


NULL_SCHEMA = {"type": "null"}
COMPONENT_REF = "#/components/schemas/{name}"
# (component, property) -> the component that property's schema is, whatever its
# Python type says: a field kept loosely typed in Python (a stored cell's `data`, read
# without being decoded) that clients decode as a named type. Both documents apply it.
_PROPERTY_REFS: dict[tuple[str, str], str] = {}


def refer_property(struct: type, field: str, component: str) -> None:
    """Publish `struct.field` as a reference to `component` (see `_PROPERTY_REFS`)."""
    _PROPERTY_REFS[(struct.__name__, field)] = component


# (component, array property) -> the name its items' schema is published under: an
# inline union of items (`list[A | B]`) that generators cannot name gets a name.
_NAMED_ITEMS: dict[tuple[str, str], tuple[str, str]] = {}


def name_items(struct: type, field: str, component: str, description: str) -> None:
    """Publish the items of the list `struct.field` as the component `component`."""
    _NAMED_ITEMS[(struct.__name__, field)] = (component, description)


def _named_items(schemas: dict[str, Any]) -> None:
    for (name, field), (component, description) in _NAMED_ITEMS.items():
        prop = schemas.get(name, {}).get("properties", {}).get(field)
        items = prop.get("items") if prop else None
        if items is None or "$ref" in items:
            continue
        schemas[component] = {"description": description, **items}
        prop["items"] = {"$ref": COMPONENT_REF.format(name=component)}


def with_property_refs(schemas: dict[str, Any]) -> dict[str, Any]:
    """`schemas` (components by name) with every referred property pointing at its
    component, and no longer required: a field so published is left out when unset;
    and every named list's items a component of their own (`name_items`)."""
    _named_items(schemas)
    for (name, field), component in _PROPERTY_REFS.items():
        schema = schemas.get(name)
        if schema is None or field not in schema.get("properties", {}):
            continue
        schema["properties"][field] = {"$ref": COMPONENT_REF.format(name=component)}
        if field in schema.get("required", ()):
            schema["required"] = [r for r in schema["required"] if r != field]
    return schemas


def _null_type(member: dict[str, Any]) -> dict[str, Any] | None:
    """`member` (one plain schema) with null added to its type, or None if it has no type."""
    kind = member.get("type")
    if not isinstance(kind, str) or {"oneOf", "anyOf", "allOf", "$ref"} & member.keys():
        return None
    result = {**member, "type": [kind, "null"]}
    if "const" in result:
        result["enum"] = [result.pop("const")]
    if "enum" in result and None not in result["enum"]:
        result["enum"] = [*result["enum"], None]
    return result


def is_free_form(node: dict[str, Any]) -> bool:
    """An object schema that names no property (any JSON object: a tool's input, an
    MCP form's schema, …)."""
    kind = node.get("type")
    kinds = kind if isinstance(kind, list) else [kind]
    return "object" in kinds and not {"properties", "additionalProperties", "$ref"} & node.keys()


_BOUNDS = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")


def _whole_bounds(node: dict[str, Any]) -> dict[str, Any]:
    """An integer's bounds as integers (Litestar writes a parameter's `le` as `100.0`,
    which generators then read as a floating-point number)."""
    kind = node.get("type")
    if "integer" not in (kind if isinstance(kind, list) else [kind]):
        return node
    whole = {
        key: int(node[key])
        for key in _BOUNDS
        if isinstance(node.get(key), float) and node[key].is_integer()
    }
    return {**node, **whole} if whole else node


def _swift_ready_schema(node: dict[str, Any]) -> dict[str, Any]:
    if is_free_form(node):  # said outright: openapi-typescript reads a bare one as `{}`-only
        node = {**node, "additionalProperties": {}}
    node = _whole_bounds(node)
    for key in ("oneOf", "anyOf"):
        members = node.get(key)
        if not isinstance(members, list):
            continue
        rest = {k: v for k, v in node.items() if k != key}
        others = [m for m in members if m != NULL_SCHEMA]
        admits_null = len(others) < len(members)
        if len(others) == 1 and not admits_null:  # `X | UnsetType` leaves `oneOf: [X]`
            return {**others[0], **rest}
        if len(others) == 1 and (typed := _null_type(others[0])) is not None:
            return {**typed, **rest}
        if admits_null:  # a `$ref` or several schemas: no type-array form exists
            return {**rest, "anyOf": [*others, NULL_SCHEMA]}
    kind = node.get("type")
    if isinstance(kind, list) and "null" in kind:
        # Litestar's own `type: [null, string]`: null last, and admitted by the enum.
        node = {**node, "type": [*(k for k in kind if k != "null"), "null"]}
        if "enum" in node and None not in node["enum"]:
            node["enum"] = [*node["enum"], None]
    return node


def swift_ready(node: Any) -> Any:
    """The OpenAPI document `node` with every schema in a form Swift generators read."""
    if isinstance(node, dict):
        node = _swift_ready_schema(node)
        return {key: swift_ready(value) for key, value in node.items()}
    if isinstance(node, list):
        return [swift_ready(value) for value in node]
    return node


class _SwiftReadyOpenAPI(OpenAPI):
    extra_schemas: dict[str, dict[str, Any]] | None = None

    def to_schema(self) -> dict[str, Any]:
        document = swift_ready(super().to_schema())
        schemas = document.setdefault("components", {}).setdefault("schemas", {})
        for name, schema in (self.extra_schemas or {}).items():
            schemas.setdefault(name, schema)  # Litestar's own schema of a Struct wins
        with_open_schemas(with_property_refs(schemas))
        return documented(with_problem_responses(document))


@dataclass
class SwiftReadyOpenAPIConfig(OpenAPIConfig):
    """Serves (and exports) the document with summaries and examples (`documented`), in
    the forms `swift_ready` writes, plus `extra_schemas`: components no operation names
    (websocket frames, tool results) that generated clients should still have."""

    extra_schemas: dict[str, dict[str, Any]] = dataclass_field(default_factory=dict)

    def to_openapi_schema(self) -> OpenAPI:
        base = super().to_openapi_schema()
        document = _SwiftReadyOpenAPI(**{f.name: getattr(base, f.name) for f in fields(base)})
        document.extra_schemas = self.extra_schemas
        return document


# Schema forms Swift client generators mis-read, and where that is documented; the tests
# walk the exported document and fail on any of them.
SWIFT_REJECTED_FORMS: dict[str, str] = {
    "oneof-null": "`oneOf` with a `{type: null}` member: swift-openapi-generator skips the "
    "whole property (apple/swift-openapi-generator#286, #817, #950)",
    "anyof-null": "`anyOf` with a `{type: null}` member, around a `$ref` too: skipped like "
    "oneOf (#817, #906, #950); write `type: [T, null]`, or leave a nullable `$ref` out of "
    "`required` and out of the body (`OmittedNullStructSchemaPlugin`)",
    "null-member-allof": '`{type: null}` inside `allOf`: \'Schema "null" is not '
    "supported ... skipping' (#553)",
    "enum-without-null": "`type: [T, null]` whose `enum` lacks null: the enum forbids the "
    "null the type admits; generated decoders fail on it",
    "single-oneof": "`oneOf` with a single member: generated as a one-case enum wrapper "
    "instead of the member's type",
    "nullable-keyword": "`nullable: true` is OpenAPI 3.0; 3.1 readers ignore it",
    "untyped-enum": "`enum` or `const` without `type`: generated as an untyped value "
    "container (swift-openapi-generator's `OpenAPIValueContainer`), not a Swift enum",
    "union-without-discriminator": "`oneOf` of several `$ref`s without a `discriminator`: "
    "generators try each member in turn instead of switching on the tag",
}


def _nodes(node: Any, path: str = "#") -> Iterator[tuple[str, dict[str, Any]]]:
    if isinstance(node, dict):
        yield path, node
        for key, value in node.items():
            yield from _nodes(value, f"{path}/{key}")
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from _nodes(value, f"{path}/{index}")


def _rejected_forms_of(node: dict[str, Any]) -> Iterator[str]:
    one_of, any_of, all_of = node.get("oneOf"), node.get("anyOf"), node.get("allOf")
    if isinstance(one_of, list) and NULL_SCHEMA in one_of:
        yield "oneof-null"
    if isinstance(one_of, list) and len(one_of) == 1:
        yield "single-oneof"
    if isinstance(any_of, list) and NULL_SCHEMA in any_of:
        yield "anyof-null"
    refs = isinstance(one_of, list) and all(set(m) == {"$ref"} for m in one_of)
    if refs and len(one_of) > 1 and "discriminator" not in node:
        yield "union-without-discriminator"
    if ("enum" in node or "const" in node) and "type" not in node:
        yield "untyped-enum"
    if isinstance(all_of, list) and NULL_SCHEMA in all_of:
        yield "null-member-allof"
    kind = node.get("type")
    if isinstance(kind, list) and "null" in kind and None not in node.get("enum", [None]):
        yield "enum-without-null"
    if node.get("nullable") is True:
        yield "nullable-keyword"


def swift_rejected_forms(document: dict[str, Any]) -> list[tuple[str, str]]:
    """(JSON pointer, form) for every schema of `document` on `SWIFT_REJECTED_FORMS`."""
    return [(path, form) for path, node in _nodes(document) for form in _rejected_forms_of(node)]
