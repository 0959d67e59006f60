"""OpenAPI generation tweaks."""

from __future__ import annotations

from typing import TYPE_CHECKING

from litestar._openapi.schema_generation.plugins.struct import StructSchemaPlugin

if TYPE_CHECKING:
    from litestar._openapi.schema_generation import SchemaCreator
    from litestar.openapi.spec import Schema
    from litestar.typing import FieldDefinition


class StrictStructSchemaPlugin(StructSchemaPlugin):
    """Document `forbid_unknown_fields` Structs (request bodies) as
    `additionalProperties: false`, which Litestar leaves out; clients and fuzzers then
    know unknown fields are rejected with a 400."""

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
        return schema
