"""openapi/asyncapi.json is generated from the frame Structs and kept current."""

from __future__ import annotations

import json

from app.lib.open_schemas import with_open_schemas
from app.lib.openapi import SWIFT_REJECTED_FORMS, swift_rejected_forms
from app.openapi_export import OPENAPI_FILE
from app.realtime.asyncapi import (
    ASYNCAPI_PATH,
    CLIENT_FRAMES,
    SERVER_FRAMES,
    build_document,
    frame_components,
    render,
)


def test_committed_asyncapi_document_is_current() -> None:
    assert ASYNCAPI_PATH.read_text() == render(), (
        "openapi/asyncapi.json is out of date: run `uv run python -m app.realtime.asyncapi`"
    )


def test_document_covers_every_frame_type() -> None:
    document = build_document()
    assert set(document["channels"]["ws"]["messages"]) == {
        "subscribe", "unsubscribe", "ping",
        "message", "branch", "subscribed", "delta", "tool_output", "tool_arguments", "run", "task", "reset",
        "memory", "pong", "error",
    }  # fmt: skip
    for ref in json.dumps(document).split('"$ref": "')[1:]:
        path = ref.split('"', 1)[0].removeprefix("#/").split("/")
        node = document
        for part in path:
            node = node[part]  # every reference resolves


def test_server_frames_are_one_union_tagged_by_type() -> None:
    published = build_document()["components"]["schemas"]
    schemas = frame_components()  # OpenAPI's form, with the mapping
    for union, frames in (("ServerFrame", SERVER_FRAMES), ("ClientFrame", CLIENT_FRAMES)):
        assert published[union]["discriminator"] == "type"  # AsyncAPI's form: a string
        assert published[union]["oneOf"] == schemas[union]["oneOf"]
        discriminator = schemas[union]["discriminator"]
        assert discriminator["propertyName"] == "type"
        mapping = discriminator["mapping"]
        refs = [m["$ref"] for m in schemas[union]["oneOf"]]
        if union == "ServerFrame":  # open: an unknown type decodes into the last member
            assert refs.pop() == "#/components/schemas/UnknownFrame"
        assert refs == list(mapping.values())
        for frame in frames:
            tag = frame.__struct_config__.tag
            assert mapping[tag] == f"#/components/schemas/{frame.__name__}"
            schema = schemas[frame.__name__]
            assert schema["properties"]["type"] == {"type": "string", "const": tag}
            assert "type" in schema["required"]


def test_an_unknown_server_frame_fits_the_fallback_member_alone() -> None:
    """`oneOf` holds exactly one member for any frame: a known `type` is not the
    fallback's, a type the server does not send is."""
    fallback = frame_components()["UnknownFrame"]
    assert fallback["required"] == ["type"] and fallback["additionalProperties"] == {}
    excluded = fallback["properties"]["type"]["not"]["enum"]
    assert sorted(excluded) == sorted(f.__struct_config__.tag for f in SERVER_FRAMES)


def test_frames_are_in_forms_swift_generators_read() -> None:
    document = build_document()
    found = swift_rejected_forms(document)
    assert not found, [f"{where}: {SWIFT_REJECTED_FORMS[form]}" for where, form in found]
    message = document["components"]["schemas"]["ThreadMessageRead"]
    assert message["properties"]["created_at"] == {"type": "string", "format": "date-time"}
    assert message["properties"]["tool_activity"] == {"$ref": "#/components/schemas/ToolActivity"}


def test_the_openapi_document_carries_the_frames_too() -> None:
    """One generator run over openapi/openapi.json gives an app the frame types as well."""
    schemas = json.loads(OPENAPI_FILE.read_text())["components"]["schemas"]
    for name, schema in with_open_schemas(frame_components()).items():
        # Litestar's own (the message and task read schemas and the types inside them)
        if name not in (
            "ThreadMessageRead",
            "TaskRead",
            "RunRead",
            "RunUsage",
            "ToolActivity",
            "Plan",
            "PlanStep",
            "PlanStepStatus",
            "MemoryRead",
            "AttachmentRead",
            "MessageSiblings",
        ):
            # openapi.json adds examples (app/lib/openapi_docs.py), e.g. to a tool result
            published = {k: v for k, v in schemas[name].items() if k != "examples"}
            assert published == schema, name


def test_inline_enums_are_named_as_the_rest_api_names_them() -> None:
    """AsyncAPI generators call an untitled inline enum AnonymousSchema_N."""
    schemas = json.loads(ASYNCAPI_PATH.read_text())["components"]["schemas"]
    untitled = [
        f"{name}.{prop}"
        for name, schema in schemas.items()
        for prop, member in (schema.get("properties") or {}).items()
        if isinstance(member, dict) and "enum" in member and "title" not in member
    ]
    assert untitled == []
    # a growing enum is a named component, referenced through its open form
    status = schemas["ToolActivity"]["properties"]["status"]
    assert status == {"$ref": "#/components/schemas/OpenToolStatus"}
    assert schemas["OpenToolStatus"]["anyOf"][0] == {"$ref": "#/components/schemas/ToolStatus"}
    assert "in_progress" in schemas["ToolStatus"]["enum"]
