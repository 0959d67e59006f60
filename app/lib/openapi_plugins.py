"""Schema plugins: Litestar's schemas of our types, adjusted to what the decoder enforces
and to forms client generators read.

Litestar leaves two things out of the schema of a msgspec Struct that the decoder
enforces: `forbid_unknown_fields` (we document `additionalProperties: false`) and length
constraints on the items of a list (`list[Annotated[str, Meta(min_length=1)]]`). A client
or fuzzer that trusts the spec would then send bodies we reject (`StrictStructSchemaPlugin`).

A nullable `$ref` has no form every Swift generator reads (app/lib/openapi.py): a response
Struct with `omit_defaults` leaves such a field out of the body instead, documented as an
optional `$ref` (`OmittedNullStructSchemaPlugin`). `Literal[...] | None` is documented as one
enum and null (`OptionalLiteralSchemaPlugin`), not as Litestar's duplicated enums.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal, get_args, get_origin

import msgspec
from litestar.openapi.spec import OpenAPIType, Schema
from litestar.plugins import OpenAPISchemaPlugin

from app.lib.schema import Schema as ResponseSchema

if TYPE_CHECKING:
    from litestar.typing import FieldDefinition

# The `schema_creator` Litestar hands to `OpenAPISchemaPlugin.to_openapi_schema`; its class
# lives in a private module, so it is not named here. Only its public members are used:
# `plugins` (every schema plugin, in the order Litestar consults them) and what the
# plugins themselves call on it.
SchemaCreator = Any


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


def _is_struct(field_definition: FieldDefinition) -> bool:
    return not field_definition.is_union and field_definition.is_subclass_of(msgspec.Struct)


class StructSchemaTweak(OpenAPISchemaPlugin):
    """Litestar's own schema of a Struct, adjusted (`adjust`).

    Claims the Structs `wants` accepts, asks the schema plugin Litestar would have used
    for them had this one not claimed them (the next plugin supporting the field, through
    the public plugin protocol), and adjusts what it returns. Subclassing Litestar's
    Struct plugin instead would import it from a private module.
    """

    def wants(self, config: msgspec.structs.StructConfig) -> bool:
        raise NotImplementedError

    def adjust(self, schema: Schema, info: msgspec.inspect.StructType) -> None:
        raise NotImplementedError

    def is_plugin_supported_field(self, field_definition: FieldDefinition) -> bool:
        config = getattr(field_definition.type_, "__struct_config__", None)
        return _is_struct(field_definition) and config is not None and self.wants(config)

    def to_openapi_schema(
        self, field_definition: FieldDefinition, schema_creator: SchemaCreator
    ) -> Schema:
        schema = self._litestars_plugin(field_definition, schema_creator).to_openapi_schema(
            field_definition, schema_creator
        )
        info = msgspec.inspect.type_info(field_definition.type_)
        assert isinstance(info, msgspec.inspect.StructType)
        self.adjust(schema, info)
        return schema

    @staticmethod
    def _litestars_plugin(field_definition: FieldDefinition, schema_creator: SchemaCreator) -> Any:
        for plugin in schema_creator.plugins:
            if isinstance(plugin, StructSchemaTweak):
                continue
            supports = getattr(plugin, "is_plugin_supported_field", None)
            if supports is not None and supports(field_definition):
                return plugin
        raise LookupError(f"no schema plugin for {field_definition.type_!r}")


class StrictStructSchemaPlugin(StructSchemaTweak):
    """Request-body Structs (`forbid_unknown_fields`) documented as strictly as decoded."""

    def wants(self, config: msgspec.structs.StructConfig) -> bool:
        return config.forbid_unknown_fields

    def adjust(self, schema: Schema, info: msgspec.inspect.StructType) -> None:
        schema.additional_properties = False
        for field in info.fields:
            constrained = _list_item_string(field.type)
            prop = (schema.properties or {}).get(field.encode_name)
            if constrained is None or not isinstance(prop, Schema):
                continue
            for item in _string_item_schemas(prop):
                item.min_length = constrained.min_length
                item.max_length = constrained.max_length


class OmittedNullStructSchemaPlugin(StructSchemaTweak):
    """Response Structs with `omit_defaults`: a field defaulting to None is left out of
    the body rather than sent as null, so it is documented as its type, not required.

    Used for a nullable `$ref` (`ThreadMessageRead.tool_activity`): no form of "this
    reference or null" is read by all of swift-openapi-generator (it skips
    `anyOf: [$ref, {type: null}]`, #817, #950), openapi-generator and openapi-python-client,
    while an optional `$ref` is.
    """

    def wants(self, config: msgspec.structs.StructConfig) -> bool:
        return config.omit_defaults and not config.forbid_unknown_fields

    def adjust(self, schema: Schema, info: msgspec.inspect.StructType) -> None:
        for field in info.fields:
            prop = (schema.properties or {}).get(field.encode_name)
            if field.default is not None or not isinstance(prop, Schema) or not prop.one_of:
                continue
            members = [m for m in prop.one_of if getattr(m, "type", None) != OpenAPIType.NULL]
            if len(members) == 1:
                schema.properties[field.encode_name] = members[0]  # type: ignore[index]


class AlwaysSentStructSchemaPlugin(StructSchemaTweak):
    """Response bodies (`Schema`) without `omit_defaults`: every field is in every body
    (null when it has nothing), so every field is documented as required, a field with a
    default too; only a field left out when unset (`UNSET`) stays optional. Otherwise a
    generated client makes an always-present field optional (`T | Unset`, `T?` twice)."""

    def wants(self, config: msgspec.structs.StructConfig) -> bool:
        return not config.omit_defaults and not config.forbid_unknown_fields

    def is_plugin_supported_field(self, field_definition: FieldDefinition) -> bool:
        return super().is_plugin_supported_field(field_definition) and issubclass(
            field_definition.type_, ResponseSchema
        )

    def adjust(self, schema: Schema, info: msgspec.inspect.StructType) -> None:
        sent = [f.encode_name for f in info.fields if f.default is not msgspec.UNSET]
        listed = {*(schema.required or []), *sent} & set(schema.properties or {})
        schema.required = sorted(listed) if listed else None


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
    `swift_ready` (app/lib/openapi.py) then writes it as `type: [string, null], enum: [a, b, null]`.
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
