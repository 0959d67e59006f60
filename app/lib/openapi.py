"""OpenAPI generation tweaks for request-body Structs.

Litestar leaves two things out of the schema of a msgspec Struct that the decoder
enforces: `forbid_unknown_fields` (we document `additionalProperties: false`) and length
constraints on the items of a list (`list[Annotated[str, Meta(min_length=1)]]`). A client
or fuzzer that trusts the spec would then send bodies we reject.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal, get_args, get_origin

import msgspec
from litestar._openapi.schema_generation.plugins.struct import StructSchemaPlugin
from litestar.openapi.spec import OpenAPIType, Schema
from litestar.plugins import OpenAPISchemaPlugin

if TYPE_CHECKING:
    from litestar._openapi.schema_generation import SchemaCreator
    from litestar.typing import FieldDefinition


def _branches(type_info: msgspec.inspect.Type) -> list[msgspec.inspect.Type]:
    if isinstance(type_info, msgspec.inspect.UnionType):
        return list(type_info.types)
    return [type_info]


def _list_item_string(type_info: msgspec.inspect.Type) -> msgspec.inspect.StrType | None:
    """The constrained string type of a (possibly optional) list's items, if any."""
    for branch in _branches(type_info):
        if isinstance(branch, msgspec.inspect.ListType):
            for item in _branches(branch.item_type):
                if isinstance(item, msgspec.inspect.StrType):
                    return item
    return None


def _string_item_schemas(schema: Schema) -> list[Schema]:
    arrays = [schema, *(s for s in schema.one_of or () if isinstance(s, Schema))]
    found = []
    for array in arrays:
        items = array.items
        if array.type != OpenAPIType.ARRAY or not isinstance(items, Schema):
            continue
        for item in [items, *(s for s in items.one_of or () if isinstance(s, Schema))]:
            if item.type == OpenAPIType.STRING:
                found.append(item)
    return found


class StrictStructSchemaPlugin(StructSchemaPlugin):
    """Request-body Structs (`forbid_unknown_fields`) documented as strictly as decoded."""

    def is_plugin_supported_field(self, field_definition: FieldDefinition) -> bool:
        if not super().is_plugin_supported_field(field_definition):
            return False
        config = getattr(field_definition.type_, "__struct_config__", None)
        return bool(config and config.forbid_unknown_fields)

    def to_openapi_schema(
        self, field_definition: FieldDefinition, schema_creator: SchemaCreator
    ) -> Schema:
        schema = super().to_openapi_schema(field_definition, schema_creator)
        schema.additional_properties = False
        info = msgspec.inspect.type_info(field_definition.type_)
        for field in getattr(info, "fields", ()):
            constrained = _list_item_string(field.type)
            prop = (schema.properties or {}).get(field.encode_name)
            if constrained is None or not isinstance(prop, Schema):
                continue
            for item in _string_item_schemas(prop):
                item.min_length = constrained.min_length
                item.max_length = constrained.max_length
        return schema


def _literal_members(field_definition: FieldDefinition) -> tuple[list[Any], bool] | None:
    """(values, nullable) for `Literal[...] | None` (and `| UnsetType`), else None."""
    if not field_definition.is_union:
        return None
    values: list[Any] = []
    nullable = False
    for inner in field_definition.inner_types:
        if inner.annotation is type(None):
            nullable = True
        elif inner.annotation is msgspec.UnsetType:
            continue
        elif get_origin(inner.annotation) is Literal:
            values.extend(get_args(inner.annotation))
        else:
            return None
    return (values, nullable) if values and None not in values else None


class OptionalLiteralSchemaPlugin(OpenAPISchemaPlugin):
    """`Literal["a", "b"] | None` as `oneOf: [{type: string, enum: [a, b]}, {type: null}]`.

    Litestar renders it as `type: [null, string], enum: [a, b, null]`, from which
    openapi-python-client (and other generators) make several duplicate enum classes.
    """

    def is_plugin_supported_field(self, field_definition: FieldDefinition) -> bool:
        return _literal_members(field_definition) is not None

    def to_openapi_schema(
        self, field_definition: FieldDefinition, schema_creator: SchemaCreator
    ) -> Schema:
        members = _literal_members(field_definition)
        assert members is not None
        values, nullable = members
        kinds = {type(v) for v in values}
        kind = OpenAPIType.STRING if kinds == {str} else OpenAPIType.INTEGER
        enum = (
            Schema(type=kind, enum=values)
            if len(values) > 1
            else Schema(type=kind, const=values[0])
        )
        return Schema(one_of=[enum, Schema(type=OpenAPIType.NULL)]) if nullable else enum
